// The Gateway module. See docs/ARCHITECTURE.md.
