// Reading a bundle's image files (PTX and cubin) for the driver. The driver trusts what it is
// given: it reads a cubin without being told its size, and on machine code that is corrupt
// but well-formed ELF cuModuleLoadDataEx can crash the process (driver 580). So every image
// is checked here, on the host, before any driver call sees it.
#pragma once

#include <cstdint>
#include <map>
#include <string>

#include "bundle/manifest.h"
#include "bundle/status.h"

namespace kiln::bundle {

/// The bytes of `im`'s cubin (`cubin`) or PTX file in `bundle_dir`, checked in this order:
/// readable ("cannot read PATH: REASON"), not empty ("PATH is empty"), at most 1 GiB; for a
/// cubin, an ELF64 whose header tables and sections lie inside the file ("PATH is not a
/// valid cubin: truncated (...)"); then the bytes' content_hash equals the manifest's ("bundle
/// image PATH does not match the hash in its manifest: corrupted or edited after compile").
/// Calls no driver function.
Result<std::string> read_image(const std::string& bundle_dir, const ArchImage& im, bool cubin);

/// read_image's checks on bytes already read, with its messages (`path` names the file in
/// them): for a cubin the ELF structure, then the hash against `im`'s. read_image is this
/// after reading the file; the fuzzer (fuzz/fuzz_image.cpp) calls it without a file.
Status check_image(const std::string& bytes, const std::string& path, const ArchImage& im,
                   bool cubin);

/// The parameter bytes of each kernel entry of a cubin that read_image accepted, by entry
/// name: from the entry's `.nv.info.NAME` section (attribute EIATTR_CBANK_PARAM_SIZE, else
/// the size in EIATTR_PARAM_CBANK). Entries whose section is absent, truncated or in a form
/// not understood are left out (nothing is then known about them). No driver call: this is
/// how the runtime counts an entry's parameters, since asking the driver past the last one
/// fails by design and compute-sanitizer reports that failure.
std::map<std::string, int64_t> cubin_param_bytes(const std::string& elf);

}  // namespace kiln::bundle
