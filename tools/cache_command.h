// `kiln cache`: look at and maintain autotune cache files (bundle/cache.h).
//
//   kiln cache show FILE [--json] [--buckets]
//                                        a table of the entries (or JSON for machines)
//   kiln cache diff A B                  entries added, removed and retuned from A to B;
//                                        exits 0 when equal, 1 when they differ, 2 on errors
//   kiln cache merge A B [...] -o C      A + B + ..., the newer entry per key, written to C
//   kiln cache prune FILE [--bundle DIR ...] [--gpu NAME ...] [-o OUT]
//                                        drop entries of kernels or GPUs no longer present
//
// Input files must exist (a typo is not an empty cache); every failure prints one line that
// names the file and returns 1 (2 for diff, whose 1 means "they differ").
#pragma once

namespace CLI {
class App;
}

namespace kiln {

/// Registers the `cache` subcommand and its verbs on `app`; call before app.parse().
void add_cache_commands(CLI::App& app);

/// Runs the `cache` verb that app.parse() selected; returns the exit code (0 ok, 1 error;
/// diff: 0 equal, 1 different, 2 error).
/// Call only when app.got_subcommand("cache").
int run_cache_commands(CLI::App& app);

}  // namespace kiln
