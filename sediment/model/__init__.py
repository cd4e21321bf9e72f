"""Pure values and rules: the memory value type, its fields, names, Obsidian's conventions,
validation, the policy and the lifecycle."""
