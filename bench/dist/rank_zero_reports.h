// The main() of a data-parallel benchmark: every rank runs the benchmarks (their collectives
// need all of them), rank 0 alone reports.
#pragma once
#include <benchmark/benchmark.h>
#include <kiln/dist.h>

#include <vector>

namespace kiln::bench {

inline int run_benchmarks_reporting_on_rank_zero(int argc, char** argv, dist::ProcessGroup*& group) {
  struct Silent : benchmark::BenchmarkReporter {
    bool ReportContext(const Context&) override { return true; }
    void ReportRuns(const std::vector<Run>&) override {}
  };
  dist::ProcessGroup g = dist::ProcessGroup::from_env();
  group = &g;
  benchmark::Initialize(&argc, argv);
  if (g.is_main()) {
    benchmark::RunSpecifiedBenchmarks();
  } else {
    Silent silent;
    benchmark::RunSpecifiedBenchmarks(&silent);
  }
  benchmark::Shutdown();
  group = nullptr;
  return 0;
}

}  // namespace kiln::bench
