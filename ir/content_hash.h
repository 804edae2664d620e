// The content hash of bytes, shared by the IR (a kernel's hash is that of its canonical text,
// ir/text.h) and the bundle (every image file's hash is in the manifest). Part of the IR core.
#pragma once

#include <string>
#include <string_view>

namespace kiln {

/// A 64-bit FNV-1a hash of `bytes`, as 16 hex digits. Not cryptographic: it tells changed
/// content from unchanged (kernels in cache keys, a bundle's image files), not a forgery.
std::string content_hash(std::string_view bytes);

}  // namespace kiln
