// The TestSupport module. See docs/ARCHITECTURE.md.
