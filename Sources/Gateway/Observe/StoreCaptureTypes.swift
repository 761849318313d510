// The store's capture types under names that do not clash with the Capture module's (the module
// `Store` is shadowed by its class `Store`, so `StoreCapturePruneResult` cannot be written).
import Store

/// The store pruner's request to the capture module.
public typealias StoreCapturePruneRequest = CapturePruneRequest
/// The capture module's answer to the store pruner.
public typealias StoreCapturePruneResult = CapturePruneResult
/// The store's capture detail setting.
typealias StoreCaptureDetail = CaptureDetail
/// The store's capture location (a flow row's `capture_file`, `capture_offset`).
public typealias StoreCaptureLocation = CaptureLocation
