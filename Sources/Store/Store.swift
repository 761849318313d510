// The Store module. See docs/ARCHITECTURE.md.
