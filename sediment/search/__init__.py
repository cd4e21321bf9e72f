"""Text to terms, the inverted index and its lanes, rank fusion and what a query means. Pure."""
