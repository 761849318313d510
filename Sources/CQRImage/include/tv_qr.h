#ifndef TV_QR_H
#define TV_QR_H
#include <stddef.h>

/// Encodes `text` (8-bit mode, error correction level L, the smallest version that fits) with
/// libqrencode. On success returns the width in modules and stores a malloc'ed width*width array
/// (1 = dark) in *modules, which the caller frees with tv_qr_free; on failure returns 0 and errno.
int tv_qr_encode(const char *text, unsigned char **modules);
void tv_qr_free(unsigned char *modules);

/// Writes a width*width module matrix as an 8-bit grayscale PNG with libpng: `scale` pixels per
/// module and a quiet zone of `margin` modules. Returns 0, or -1 with a message in `error`
/// (libpng reports errors by longjmp, which is why this lives in C).
int tv_qr_write_png(const char *path, const unsigned char *modules, int width, int scale, int margin,
                    char *error, size_t error_size);
#endif
