// ChaCha20-Poly1305 (RFC 8439) through OpenSSL's EVP interface, for WireGuard transport data:
// one cipher context per thread and direction, created on first use and reused for every packet
// (EVP_CipherInit_ex with only key and nonce: no allocation per packet).
#pragma once
#include <stddef.h>
#include <stdint.h>

// Encrypts `len` bytes at `data` in place and writes the 16-byte tag at data + len.
// `nonce` is 12 bytes. Returns 1 on success, -1 when OpenSSL fails (context allocation).
int tv_evp_chacha_seal(const uint8_t *key, const uint8_t *nonce, uint8_t *data, size_t len,
                       const uint8_t *ad, size_t adlen);

// Verifies and decrypts `len` bytes (ciphertext, then the 16-byte tag) at `data` in place: the
// plaintext is the first len - 16 bytes. Returns 1 when the tag verifies, 0 when it does not (the
// bytes are then zeroed), -1 when OpenSSL fails (context allocation).
int tv_evp_chacha_open(const uint8_t *key, const uint8_t *nonce, uint8_t *data, size_t len,
                       const uint8_t *ad, size_t adlen);
