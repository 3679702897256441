#!/usr/bin/env python3
"""Writes ImageDecoder test cases decoded by PIL: tests/frontends/onnx_image_decoder/<case>/
model.onnx and test_data_set_0/{input,output}_0.pb, the layout `kiln onnx-test` reads.

Each case encodes a small synthetic image (odd sizes, so that row padding and chroma
subsampling show) in one format variant with PIL, and stores what PIL decodes it to as the
expected output: img.convert("RGB") for RGB (reversed for BGR), img.convert("L") for
Grayscale, the conversions ONNX's reference implementation makes. Kiln's decoders
(builtins/image/) must give the same bytes.

Data generation only, never part of the build or CI. Debian's Pillow (python3-pil) links the
same Debian libraries Kiln does; `onnx` and numpy come from a venv. Run:
  apt-get install python3-pil
  PYTHONPATH=/usr/lib/python3/dist-packages /work/venv-peer/bin/python \
      scripts/make_image_decoder_tests.py tests/frontends/onnx_image_decoder
"""
import io
import os
import sys

import numpy as np
import onnx
import PIL.Image
from onnx import TensorProto, helper, numpy_helper


def picture(width, height, mode):
    """A smooth colour gradient with sharp edges, so lossy codecs have work to do."""
    y, x = np.mgrid[0:height, 0:width]
    r = (x * 255 // max(width - 1, 1)).astype(np.uint8)
    g = (y * 255 // max(height - 1, 1)).astype(np.uint8)
    b = (((x // 3 + y // 2) % 2) * 200 + 30).astype(np.uint8)
    a = ((x + y) * 20 % 256).astype(np.uint8)
    rgba = PIL.Image.fromarray(np.stack([r, g, b, a], axis=2), "RGBA")
    if mode == "RGBA":
        return rgba
    if mode == "P":
        return rgba.convert("RGB").quantize(colors=13)
    return rgba.convert(mode)


def encode(image, fmt, **options):
    out = io.BytesIO()
    image.save(out, format=fmt, **options)
    return out.getvalue()


# name: (encoded bytes, pixel format)
def cases():
    rgb = picture(13, 7, "RGB")
    gray = picture(11, 6, "L")
    yield "jpeg_420_rgb", encode(rgb, "JPEG", quality=85), "RGB"
    yield "jpeg_444_bgr", encode(rgb, "JPEG", quality=90, subsampling=0), "BGR"
    yield "jpeg_422_grayscale", encode(picture(17, 9, "RGB"), "JPEG", subsampling=1), "Grayscale"
    yield "jpeg_progressive_rgb", encode(picture(19, 12, "RGB"), "JPEG", progressive=True), "RGB"
    yield "jpeg_gray_source_rgb", encode(gray, "JPEG"), "RGB"
    yield "png_rgb", encode(rgb, "PNG"), "RGB"
    yield "png_rgba_bgr", encode(picture(9, 5, "RGBA"), "PNG"), "BGR"
    yield "png_palette_rgb", encode(picture(10, 6, "P"), "PNG"), "RGB"
    yield "png_palette_grayscale", encode(picture(10, 6, "P"), "PNG"), "Grayscale"
    yield "png_gray_rgb", encode(gray, "PNG"), "RGB"
    yield "png_1bit_rgb", encode(picture(13, 5, "1"), "PNG"), "RGB"
    yield "png_interlaced_rgb", encode_interlaced(), "RGB"
    yield "png_rgb_grayscale", encode(rgb, "PNG"), "Grayscale"
    yield "bmp_24bit_rgb", encode(rgb, "BMP"), "RGB"
    yield "bmp_8bit_palette_rgb", encode(picture(10, 6, "P"), "BMP"), "RGB"
    yield "bmp_gray_grayscale", encode(gray, "BMP"), "Grayscale"
    yield "bmp_1bit_rgb", encode(picture(13, 5, "1"), "BMP"), "RGB"
    yield "bmp_32bit_rgba_rgb", encode(picture(9, 5, "RGBA"), "BMP"), "RGB"
    yield "bmp_16bit_555_rgb", bmp16(7, 5, None), "RGB"
    yield "bmp_16bit_565_bitfields_rgb", bmp16(7, 5, (0xF800, 0x07E0, 0x001F)), "RGB"
    yield "ppm_rgb", encode(rgb, "PPM"), "RGB"
    yield "pgm_grayscale", encode(gray, "PPM"), "Grayscale"
    yield "pbm_rgb", encode(picture(13, 5, "1"), "PPM"), "RGB"
    yield "ppm_ascii_maxval_100_rgb", b"P3\n# a comment\n3 2\n100\n0 50 99 100 1 4\n7 8 9 10 11 12\n13 14 15 16 17 18\n", "RGB"
    yield "tiff_raw_rgb", encode(rgb, "TIFF"), "RGB"
    yield "tiff_lzw_bgr", encode(rgb, "TIFF", compression="tiff_lzw"), "BGR"
    yield "tiff_deflate_gray_rgb", encode(gray, "TIFF", compression="tiff_adobe_deflate"), "RGB"
    yield "tiff_packbits_grayscale", encode(rgb, "TIFF", compression="packbits"), "Grayscale"
    yield "webp_lossy_rgb", encode(picture(15, 9, "RGB"), "WEBP", quality=80), "RGB"
    yield "webp_lossless_bgr", encode(rgb, "WEBP", lossless=True), "BGR"
    yield "webp_lossy_grayscale", encode(picture(15, 9, "RGB"), "WEBP", quality=60), "Grayscale"
    yield "jp2_rgb", encode(rgb, "JPEG2000"), "RGB"
    yield "j2k_codestream_bgr", encode(rgb, "JPEG2000", no_jp2=True), "BGR"
    yield "jp2_gray_grayscale", encode(gray, "JPEG2000"), "Grayscale"
    yield "jp2_lossy_rgb", encode(picture(16, 10, "RGB"), "JPEG2000", quality_mode="rates", quality_layers=[20]), "RGB"


def encode_interlaced():
    """PIL writes no interlaced PNG: Adam7 written here (filter 0 rows, one zlib stream)."""
    import struct
    import zlib
    image = np.array(picture(15, 11, "RGB"))
    h, w, _ = image.shape
    passes = [(0, 0, 8, 8), (4, 0, 8, 8), (0, 4, 4, 8), (2, 0, 4, 4), (0, 2, 2, 4), (1, 0, 2, 2), (0, 1, 1, 2)]
    raw = b""
    for x0, y0, dx, dy in passes:
        sub = image[y0::dy, x0::dx]
        if sub.size:
            raw += b"".join(b"\0" + row.tobytes() for row in sub)

    def chunk(kind, data):
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", w, h, 8, 2, 0, 0, 1)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw)) + chunk(b"IEND", b"")


def bmp16(width, height, masks):
    """PIL writes no 16-bit BMP: random 16-bit pixels, BI_RGB (5-5-5) or BI_BITFIELDS, written here."""
    import struct
    pixels = np.random.default_rng(3).integers(0, 65536, (height, width))
    stride = (width * 16 + 31) // 32 * 4
    rows = b"".join(row.astype("<u2").tobytes().ljust(stride, b"\0") for row in pixels[::-1])
    extra = struct.pack("<III", *masks) if masks else b""
    offset = 14 + 40 + len(extra)
    info = struct.pack("<IiiHHIIiiII", 40, width, height, 1, 16, 3 if masks else 0, len(rows), 2835, 2835, 0, 0)
    return b"BM" + struct.pack("<IHHI", offset + len(rows), 0, 0, offset) + info + extra + rows


def expected(encoded, pixel_format):
    image = PIL.Image.open(io.BytesIO(encoded))
    if pixel_format == "Grayscale":
        return np.array(image.convert("L"))[:, :, None]
    decoded = np.array(image.convert("RGB"))
    return decoded[:, :, ::-1] if pixel_format == "BGR" else decoded


def write_case(root, name, encoded, pixel_format):
    output = np.ascontiguousarray(expected(encoded, pixel_format))
    node = helper.make_node("ImageDecoder", ["data"], ["output"], pixel_format=pixel_format)
    graph = helper.make_graph([node], "test_image_decoder_" + name,
                              [helper.make_tensor_value_info("data", TensorProto.UINT8, [len(encoded)])],
                              [helper.make_tensor_value_info("output", TensorProto.UINT8, list(output.shape))])
    model = helper.make_model(graph, producer_name="kiln-make-image-decoder-tests",
                              opset_imports=[helper.make_opsetid("", 20)])
    model.ir_version = 9
    folder = os.path.join(root, "test_image_decoder_" + name)
    os.makedirs(os.path.join(folder, "test_data_set_0"), exist_ok=True)
    onnx.save(model, os.path.join(folder, "model.onnx"))
    data = np.frombuffer(encoded, dtype=np.uint8)
    for kind, array in (("input_0", data), ("output_0", output)):
        with open(os.path.join(folder, "test_data_set_0", kind + ".pb"), "wb") as f:
            f.write(numpy_helper.from_array(array, "data" if kind == "input_0" else "output").SerializeToString())


def main():
    root = sys.argv[1]
    for name, encoded, pixel_format in cases():
        write_case(root, name, encoded, pixel_format)
        print(name, len(encoded), "bytes")


if __name__ == "__main__":
    main()
