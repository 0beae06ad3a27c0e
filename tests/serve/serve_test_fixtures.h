// What the HTTP service's tests share: deterministic test images, request bodies, the model run
// alone as the reference for the service's answers, loopback clients, and a gate that holds the
// batcher's worker inside a batch so that queues, deadlines and drains can be set up exactly.
#pragma once
#include <httplib.h>

#include <chrono>
#include <condition_variable>
#include <cstdint>
#include <memory>
#include <mutex>
#include <nlohmann/json.hpp>
#include <optional>
#include <random>
#include <string>
#include <thread>
#include <vector>

#include "examples/fashion_mnist_model.h"
#include "kiln/data/data.h"
#include "kiln/serve/batcher.h"

namespace kiln::test {

inline constexpr std::size_t kPixels = kFashionMnistSide * kFashionMnistSide;

// A fresh SmallCNN from `seed`, in eval mode.
inline SmallCNN seeded_model(std::uint64_t seed) {
  manual_seed(seed);
  SmallCNN model;
  model.eval();
  return model;
}

// 784 pixels of k / 255, as a real image sent as pixel / 255; the same for the same seed.
inline std::vector<float> test_image(std::uint64_t seed) {
  std::mt19937_64 rng(seed * 7919 + 1);
  std::vector<float> image(kPixels);
  for (float& p : image) p = static_cast<float>(rng() % 256) / 255.0f;
  return image;
}

inline std::string classify_body(const std::vector<float>& image, const nlohmann::json& id = nullptr,
                                 std::optional<double> deadline_ms = std::nullopt) {
  nlohmann::json body = {{"image", image}};
  if (!id.is_null()) body["id"] = id;
  if (deadline_ms) body["deadline_ms"] = *deadline_ms;
  return body.dump();
}

// The model alone on one image: the training's own transform (data::Normalize with the values
// of examples/fashion_mnist.cpp), then forward on [1, 1, 28, 28]. `model` must be in eval mode.
inline Future<std::vector<float>> reference_scores(const SmallCNN& model, const std::vector<float>& image) {
  const data::Normalize normalize{{0.2860f}, {0.3530f}};
  const data::Example e = normalize(data::Example{image, Shape{1, kFashionMnistSide, kFashionMnistSide}});
  const NoGradGuard no_grad;
  return model.forward(from_vector(e.features, Shape{1, 1, kFashionMnistSide, kFashionMnistSide})).to_vector<float>();
}

// The model alone on many images at once, one row of scores per image: the reference for a load
// of hundreds of requests in one forward pass (one pass per image takes minutes under TSan).
inline std::vector<std::vector<float>> reference_scores(const SmallCNN& model,
                                                        const std::vector<std::vector<float>>& images) {
  const data::Normalize normalize{{0.2860f}, {0.3530f}};
  std::vector<float> batch;
  batch.reserve(images.size() * kPixels);
  for (const auto& image : images) {
    const data::Example e = normalize(data::Example{image, Shape{1, kFashionMnistSide, kFashionMnistSide}});
    batch.insert(batch.end(), e.features.begin(), e.features.end());
  }
  const auto n = static_cast<std::int64_t>(images.size());
  const NoGradGuard no_grad;
  const std::vector<float> all =
      model.forward(from_vector(batch, Shape{n, 1, kFashionMnistSide, kFashionMnistSide})).to_vector<float>().get();
  const std::size_t classes = all.size() / images.size();
  std::vector<std::vector<float>> rows(images.size());
  for (std::size_t i = 0; i < rows.size(); ++i)
    rows[i].assign(all.begin() + static_cast<std::ptrdiff_t>(i * classes),
                   all.begin() + static_cast<std::ptrdiff_t>((i + 1) * classes));
  return rows;
}

// A keep-alive loopback client. Accept-Encoding: identity keeps answers uncompressed (httplib
// asks for gzip/brotli by default, which costs more than the answer on loopback).
inline std::unique_ptr<httplib::Client> loopback_client(int port) {
  auto client = std::make_unique<httplib::Client>("127.0.0.1", port);
  client->set_keep_alive(true);
  client->set_tcp_nodelay(true);
  client->set_connection_timeout(std::chrono::seconds(10));
  client->set_read_timeout(std::chrono::seconds(30));
  client->set_default_headers({{"Accept-Encoding", "identity"}});
  return client;
}

struct Answer {
  int status = 0;  // 0: no HTTP answer at all (connection failed or closed)
  std::string retry_after;
  nlohmann::json body;
};

inline Answer post_classify(httplib::Client& client, const std::string& body) {
  const httplib::Result r = client.Post("/v1/classify", body, "application/json");
  if (!r) return {};
  Answer a{r->status, r->get_header_value("Retry-After"), nlohmann::json::parse(r->body, nullptr, false)};
  return a;
}

// Holds every batch at the door while closed (open at first, so that warm-up passes through).
// `entered()` counts the batches that reached it.
class Gate {
 public:
  serve::BatchFunction wrap(serve::BatchFunction inner) {
    return [this, inner = std::move(inner)](const Tensor& batch) {
      {
        std::unique_lock lock(mutex_);
        ++entered_;
        changed_.notify_all();
        changed_.wait(lock, [&] { return open_; });
      }
      return inner(batch);
    };
  }
  void close() { set(false); }
  void open() { set(true); }
  int entered() const {
    const std::lock_guard lock(mutex_);
    return entered_;
  }
  // Waits (at most 30 s) until `n` batches have reached the gate.
  bool wait_entered(int n) {
    std::unique_lock lock(mutex_);
    return changed_.wait_for(lock, std::chrono::seconds(30), [&] { return entered_ >= n; });
  }

 private:
  void set(bool open) {
    const std::lock_guard lock(mutex_);
    open_ = open;
    changed_.notify_all();
  }
  mutable std::mutex mutex_;
  std::condition_variable changed_;
  bool open_ = true;
  int entered_ = 0;
};

// Polls `condition` every millisecond for at most 30 s.
template <class Condition>
bool eventually(Condition condition) {
  const auto until = std::chrono::steady_clock::now() + std::chrono::seconds(30);
  while (!condition()) {
    if (std::chrono::steady_clock::now() > until) return false;
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  return true;
}

}  // namespace kiln::test
