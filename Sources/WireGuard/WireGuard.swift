// The WireGuard module. See docs/ARCHITECTURE.md.
