// The Capture module. See docs/ARCHITECTURE.md.
