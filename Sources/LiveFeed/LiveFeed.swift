// The LiveFeed module. See docs/ARCHITECTURE.md.
