"""CLI commands, one module per area; each command is: arguments -> one call -> render."""
