// The main() of a data-parallel benchmark: every rank runs the benchmarks (their collectives
// need all of them), rank 0 alone reports, on the console and in --benchmark_out's file.
#pragma once
#include <benchmark/benchmark.h>
#include <kiln/dist.h>

#include <string_view>
#include <vector>

namespace kiln::bench {

inline int run_benchmarks_reporting_on_rank_zero(int argc, char** argv, dist::ProcessGroup*& group) {
  struct Silent : benchmark::BenchmarkReporter {
    bool ReportContext(const Context&) override { return true; }
    void ReportRuns(const std::vector<Run>&) override {}
  };
  dist::ProcessGroup g = dist::ProcessGroup::from_env();
  group = &g;
  // The other ranks drop --benchmark_out: Google Benchmark would have each of them write the
  // same file, and the last one to finish would leave its own, silent, results there.
  std::vector<char*> args(argv, argv + argc);
  if (!g.is_main())
    std::erase_if(args, [](const char* a) { return std::string_view(a).starts_with("--benchmark_out"); });
  int count = static_cast<int>(args.size());
  args.push_back(nullptr);
  benchmark::Initialize(&count, args.data());
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
