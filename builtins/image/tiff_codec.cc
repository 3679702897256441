// TIFF through libtiff (image_codecs.h): the first image, read with TIFFReadRGBAImageOriented
// (every photometric, bit depth and compression the library knows, rows top to bottom), alpha
// dropped; a one-sample gray image (min-is-black or min-is-white) stays one channel. Errors
// and warnings go to handlers of this decode (TIFFOpenOptions), not to stderr.
#include "absl/strings/str_cat.h"
#include "builtins/image/image_codecs.h"

#ifdef KILN_HAVE_TIFF
#include <tiffio.h>

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <string>
#include <vector>
#endif

namespace kiln::builtins {

#ifndef KILN_HAVE_TIFF

absl::StatusOr<DecodedImage> DecodeTiff(absl::Span<const uint8_t>) {
  return absl::UnimplementedError("TIFF: this Kiln was built without libtiff (install libtiff-dev and rebuild)");
}

#else

namespace {

// The encoded bytes as a read-only file for TIFFClientOpenExt.
struct MemoryFile {
  absl::Span<const uint8_t> bytes;
  toff_t offset = 0;
  std::string error;  // the first error libtiff reported
};

tmsize_t ReadProc(thandle_t h, void* out, tmsize_t size) {
  auto* f = static_cast<MemoryFile*>(h);
  if (size < 0 || f->offset >= f->bytes.size()) return 0;
  const tmsize_t n = static_cast<tmsize_t>(std::min<toff_t>(static_cast<toff_t>(size), f->bytes.size() - f->offset));
  std::memcpy(out, f->bytes.data() + f->offset, static_cast<size_t>(n));
  f->offset += static_cast<toff_t>(n);
  return n;
}

tmsize_t WriteProc(thandle_t, void*, tmsize_t) { return -1; }

toff_t SeekProc(thandle_t h, toff_t offset, int whence) {
  auto* f = static_cast<MemoryFile*>(h);
  const toff_t base = whence == SEEK_CUR ? f->offset : whence == SEEK_END ? f->bytes.size() : 0;
  if (offset > ~toff_t{0} - base) return static_cast<toff_t>(-1);
  f->offset = base + offset;  // past the end reads nothing
  return f->offset;
}

int CloseProc(thandle_t) { return 0; }
toff_t SizeProc(thandle_t h) { return static_cast<MemoryFile*>(h)->bytes.size(); }
int MapProc(thandle_t, void**, toff_t*) { return 0; }
void UnmapProc(thandle_t, void*, toff_t) {}

int ErrorHandler(TIFF*, void* user, const char* module, const char* format, va_list args) {
  auto* f = static_cast<MemoryFile*>(user);
  if (f->error.empty()) {
    char message[512];
    std::vsnprintf(message, sizeof(message), format, args);
    f->error = message;
  }
  return 1;  // handled: the global handler (stderr) is not called
}

int WarningHandler(TIFF*, void*, const char*, const char*, va_list) { return 1; }

absl::Status Failed(const MemoryFile& f, const char* what) {
  return absl::InvalidArgumentError(absl::StrCat("TIFF: ", what, f.error.empty() ? "" : ": ", f.error));
}

}  // namespace

absl::StatusOr<DecodedImage> DecodeTiff(absl::Span<const uint8_t> bytes) {
  MemoryFile file{bytes, 0, {}};
  TIFFOpenOptions* options = TIFFOpenOptionsAlloc();
  TIFFOpenOptionsSetErrorHandlerExtR(options, ErrorHandler, &file);
  TIFFOpenOptionsSetWarningHandlerExtR(options, WarningHandler, &file);
  // A corrupt header must not make libtiff allocate without bound either.
  TIFFOpenOptionsSetMaxSingleMemAlloc(options, static_cast<tmsize_t>(kMaxImagePixels) * 4);
  TIFF* tif = TIFFClientOpenExt("memory", "rm", &file, ReadProc, WriteProc, SeekProc, CloseProc, SizeProc, MapProc,
                                UnmapProc, options);
  TIFFOpenOptionsFree(options);
  if (tif == nullptr) return Failed(file, "cannot read the header");
  uint32_t width = 0, height = 0;
  uint16_t samples = 1, photometric = PHOTOMETRIC_RGB;
  TIFFGetField(tif, TIFFTAG_IMAGEWIDTH, &width);
  TIFFGetField(tif, TIFFTAG_IMAGELENGTH, &height);
  TIFFGetFieldDefaulted(tif, TIFFTAG_SAMPLESPERPIXEL, &samples);
  TIFFGetField(tif, TIFFTAG_PHOTOMETRIC, &photometric);
  const bool gray = samples == 1 && (photometric == PHOTOMETRIC_MINISBLACK || photometric == PHOTOMETRIC_MINISWHITE);
  DecodedImage image;
  if (absl::Status s = SizeImage("TIFF", width, height, gray ? 1 : 3, image); !s.ok()) {
    TIFFClose(tif);
    return s;
  }
  std::vector<uint32_t> raster(static_cast<size_t>(width) * height);
  char message[1024] = "";
  const int ok = TIFFRGBAImageOK(tif, message) &&
                 TIFFReadRGBAImageOriented(tif, width, height, raster.data(), ORIENTATION_TOPLEFT, 1);
  TIFFClose(tif);
  if (!ok) {
    if (file.error.empty()) file.error = message;
    return Failed(file, "cannot decode the image");
  }
  // Each raster word is A B G R from the high byte down (TIFFGetR / TIFFGetG / TIFFGetB).
  uint8_t* out = image.pixels.data();
  for (uint32_t p : raster) {
    *out++ = static_cast<uint8_t>(p & 0xff);
    if (!gray) {
      *out++ = static_cast<uint8_t>((p >> 8) & 0xff);
      *out++ = static_cast<uint8_t>((p >> 16) & 0xff);
    }
  }
  return image;
}

#endif

}  // namespace kiln::builtins
