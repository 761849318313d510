#if canImport(Glibc)
import Core
import Glibc
#endif

/// `strerror` text for an errno value.
func errnoText(_ e: Int32) -> String {
    String(cString: strerror(e))
}
