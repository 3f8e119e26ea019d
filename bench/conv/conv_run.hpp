// The conv2d subcommand's flow: device header, floor, one row per problem (check, then time tilefuse
// and the cuDNN peers), the table with geometric means, and the JSON report.
#pragma once

#include "cli.hpp"

namespace tilefuse::bench {

// Exit status: 0 all good, 1 a mismatch or an error (a run that cannot start throws BenchError).
int run_conv2d(CliOptions const& options);

}  // namespace tilefuse::bench
