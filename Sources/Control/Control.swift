// The Control module. See docs/ARCHITECTURE.md.
