// QR codes for `tunnelctl peer qr`: libqrencode for the matrix, libpng for the file.
#include "tv_qr.h"
#include <errno.h>
#include <png.h>
#include <qrencode.h>
#include <setjmp.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

int tv_qr_encode(const char *text, unsigned char **modules) {
    QRcode *code = QRcode_encodeString(text, 0, QR_ECLEVEL_L, QR_MODE_8, 1);
    if (code == NULL) return 0;
    int w = code->width;
    unsigned char *out = malloc((size_t)w * (size_t)w);
    if (out == NULL) { QRcode_free(code); errno = ENOMEM; return 0; }
    for (int i = 0; i < w * w; i++) out[i] = code->data[i] & 1;
    QRcode_free(code);
    *modules = out;
    return w;
}

void tv_qr_free(unsigned char *modules) { free(modules); }

struct tv_png_error { jmp_buf jump; char *message; size_t size; };

static void tv_png_fail(png_structp png, png_const_charp msg) {
    struct tv_png_error *e = png_get_error_ptr(png);
    snprintf(e->message, e->size, "libpng: %s", msg);
    longjmp(e->jump, 1);
}

static void tv_png_warn(png_structp png, png_const_charp msg) { (void)png; (void)msg; }

int tv_qr_write_png(const char *path, const unsigned char *modules, int width, int scale, int margin,
                    char *error, size_t error_size) {
    FILE *f = fopen(path, "wb");
    if (f == NULL) { snprintf(error, error_size, "open(%s): %s", path, strerror(errno)); return -1; }
    struct tv_png_error e = { .message = error, .size = error_size };
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &e, tv_png_fail, tv_png_warn);
    png_infop info = png ? png_create_info_struct(png) : NULL;
    int side = (width + 2 * margin) * scale;
    png_bytep row = malloc((size_t)side);
    if (png == NULL || info == NULL || row == NULL) {
        snprintf(error, error_size, "out of memory");
        png_destroy_write_struct(&png, &info); free(row); fclose(f);
        return -1;
    }
    if (setjmp(e.jump)) {
        png_destroy_write_struct(&png, &info); free(row); fclose(f);
        return -1;
    }
    png_init_io(png, f);
    png_set_IHDR(png, info, (png_uint_32)side, (png_uint_32)side, 8, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    for (int y = 0; y < side; y++) {
        int my = y / scale - margin;
        for (int x = 0; x < side; x++) {
            int mx = x / scale - margin;
            int dark = mx >= 0 && my >= 0 && mx < width && my < width && modules[my * width + mx];
            row[x] = dark ? 0 : 255;
        }
        png_write_row(png, row);
    }
    png_write_end(png, info);
    png_destroy_write_struct(&png, &info);
    free(row);
    if (fclose(f) != 0) { snprintf(error, error_size, "close(%s): %s", path, strerror(errno)); return -1; }
    return 0;
}
