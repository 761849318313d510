// OpenSSL's libcrypto (Debian libssl-dev): HKDF-SHA256, AES-128-ECB and AES-128-GCM for QUIC
// Initial packets (RFC 9001 §5). Only the EVP interface is used.
#include <openssl/evp.h>
#include <openssl/kdf.h>
#include <openssl/core_names.h>
#include <openssl/params.h>
