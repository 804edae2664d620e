// Reading a bundle's image files (PTX and cubin) for the driver. The driver trusts what it is
// given: it reads a cubin without being told its size, and on machine code that is corrupt
// but well-formed ELF cuModuleLoadDataEx can crash the process (driver 580). So every image
// is checked here, on the host, before any driver call sees it.
#pragma once

#include <string>

#include "runtime/manifest.h"
#include "runtime/status.h"

namespace kiln::bundle {

/// The bytes of `im`'s cubin (`cubin`) or PTX file in `bundle_dir`, checked in this order:
/// readable ("cannot read PATH: REASON"), not empty ("PATH is empty"), at most 1 GiB; for a
/// cubin, an ELF64 whose header tables and sections lie inside the file ("PATH is not a
/// valid cubin: truncated (...)"); then the bytes' content_hash equals the manifest's ("bundle
/// image PATH does not match the hash in its manifest: corrupted or edited after compile").
/// Calls no driver function.
Result<std::string> read_image(const std::string& bundle_dir, const ArchImage& im, bool cubin);

}  // namespace kiln::bundle
