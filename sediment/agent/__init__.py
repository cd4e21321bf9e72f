"""What an agent asks of its memory: context, working memory, about, conflicts, patrol, the palace map, sources."""
