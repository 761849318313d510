// The Policy module. See docs/ARCHITECTURE.md.
