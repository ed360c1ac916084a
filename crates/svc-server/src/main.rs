//! The `svc` binary: the allocator, and the command line of `cli/` (`serve`, `migrate`,
//! `config check`, `admin …`; docs/cli.md).

mod cli;

use std::process::ExitCode;

/// mimalloc instead of glibc's allocator: the edge path allocates and frees many small buffers
/// (request bodies, JSON, event rows) and glibc's `malloc`/`free`/`malloc_consolidate` took ~18% of
/// the request thread's CPU in the profiles (docs/PERFORMANCE.md). Built without transparent huge
/// pages (`no_thp`): with them every first touch of its arenas zeroed a whole 2 MiB page, 18% of
/// the start-up with 100,000 policies and ~13 MB of peak RSS; the edge points stayed within noise.
#[global_allocator]
static ALLOCATOR: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn main() -> ExitCode {
    cli::main()
}
