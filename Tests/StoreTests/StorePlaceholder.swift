// Tests for Store live in this target; this file keeps the target non-empty until they arrive.
