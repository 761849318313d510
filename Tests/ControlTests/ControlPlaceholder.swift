// Tests for Control live in this target; this file keeps the target non-empty until they arrive.
