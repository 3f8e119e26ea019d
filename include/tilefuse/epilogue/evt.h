// The epilogue visitor tree: include this to write epilogues. See docs/ARCHITECTURE.md.
#pragma once

#include <tilefuse/epilogue/compute.h>
#include <tilefuse/epilogue/evaluate.h>
#include <tilefuse/epilogue/fragment.h>
#include <tilefuse/epilogue/leaves.h>
#include <tilefuse/epilogue/ops.h>
#include <tilefuse/epilogue/sinks.h>
