"""The story of each scheduled row: a timeline read from the row's own columns (scheduled,
published, handled) and from `EventHistory` entries, written only for the other transitions,
in the statement (or transaction) that makes the change."""
