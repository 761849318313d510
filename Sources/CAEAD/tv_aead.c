#include "tv_aead.h"
#include <limits.h>
#include <openssl/crypto.h>
#include <openssl/evp.h>

// Per thread: the data path's encrypt and decrypt threads each get their own pair, made once.
static __thread EVP_CIPHER_CTX *seal_ctx;
static __thread EVP_CIPHER_CTX *open_ctx;

static EVP_CIPHER_CTX *context(EVP_CIPHER_CTX **slot, int enc) {
    if (*slot) return *slot;
    EVP_CIPHER_CTX *c = EVP_CIPHER_CTX_new();
    if (!c) return NULL;
    if (EVP_CipherInit_ex(c, EVP_chacha20_poly1305(), NULL, NULL, NULL, enc) != 1) {
        EVP_CIPHER_CTX_free(c);
        return NULL;
    }
    *slot = c;
    return c;
}

int tv_evp_chacha_seal(const uint8_t *key, const uint8_t *nonce, uint8_t *data, size_t len,
                       const uint8_t *ad, size_t adlen) {
    EVP_CIPHER_CTX *c = context(&seal_ctx, 1);
    if (!c || len > INT_MAX || adlen > INT_MAX) return -1;
    int n = 0;
    if (EVP_CipherInit_ex(c, NULL, NULL, key, nonce, 1) != 1) return -1;
    if (adlen && EVP_CipherUpdate(c, NULL, &n, ad, (int)adlen) != 1) return -1;
    if (len && EVP_CipherUpdate(c, data, &n, data, (int)len) != 1) return -1;
    if (EVP_CipherFinal_ex(c, data + len, &n) != 1) return -1;
    return EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_GET_TAG, 16, data + len) == 1 ? 1 : -1;
}

int tv_evp_chacha_open(const uint8_t *key, const uint8_t *nonce, uint8_t *data, size_t len,
                       const uint8_t *ad, size_t adlen) {
    if (len < 16) return 0;
    if (len - 16 > INT_MAX || adlen > INT_MAX) return -1;
    EVP_CIPHER_CTX *c = context(&open_ctx, 0);
    if (!c) return -1;
    size_t clen = len - 16;
    int n = 0;
    if (EVP_CipherInit_ex(c, NULL, NULL, key, nonce, 0) != 1) return -1;
    if (EVP_CIPHER_CTX_ctrl(c, EVP_CTRL_AEAD_SET_TAG, 16, data + clen) != 1) return -1;
    if (adlen && EVP_CipherUpdate(c, NULL, &n, ad, (int)adlen) != 1) return -1;
    // EVP decrypts in place before the tag is checked (libsodium checks first): on a bad tag the
    // bytes are zeroed, so no unverified plaintext is left behind.
    if (clen && EVP_CipherUpdate(c, data, &n, data, (int)clen) != 1) return -1;
    if (EVP_CipherFinal_ex(c, data + clen, &n) == 1) return 1;
    OPENSSL_cleanse(data, clen);
    return 0;
}
