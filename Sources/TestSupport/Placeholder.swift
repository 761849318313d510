// The TestSupport module: in-memory fakes for Gateway protocols. See docs/sysio.md.
