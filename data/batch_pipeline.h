// The threads behind a DataLoader epoch, free of item and batch types: worker threads build
// batches first..end-1 ahead of the consumer, at most `ahead` batches past the one it waits for, and
// next() hands them over in order. With no workers, next() builds each batch itself.
#pragma once
#include <cstdint>
#include <functional>
#include <memory>
#include <string>

namespace kiln::data::detail {

class BatchPipeline {
 public:
  // Builds batch i; may throw (a bad file, a transform's error). Called from worker threads.
  using MakeBatch = std::function<std::shared_ptr<void>(std::int64_t index)>;

  // `context` names the run in errors ("epoch 3").
  BatchPipeline(std::int64_t first, std::int64_t end, int workers, int ahead, MakeBatch make, std::string context);
  // Stops the workers and joins them; a worker finishes the batch it is building first.
  ~BatchPipeline();
  BatchPipeline(const BatchPipeline&) = delete;
  BatchPipeline& operator=(const BatchPipeline&) = delete;

  // The next batch in order, or null after the last. A batch that failed to build throws here,
  // as a kiln::Error naming the run and the batch, and ends the run.
  std::shared_ptr<void> next();

 private:
  struct State;
  std::unique_ptr<State> state_;
};

}  // namespace kiln::data::detail
