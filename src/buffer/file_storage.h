// JSONL experience file (storage_type: file): an append-only writer (one experience per line, arrays
// included, so unlike Trinity's to_dict output it reads back losslessly) and a sequential reader whose
// state is the line offset. A file is a static dataset: there are no pending rewards, leases are only
// bookkeeping, and the end of the file is ReadStatus::kClosed. Malformed lines are ValueErrors naming
// path:line.
#pragma once

#include <cstdio>
#include <mutex>

#include "buffer/storage.h"

namespace trinity::buffer {

class FileStorage : public ExperienceStorage {
 public:
  explicit FileStorage(const StorageConfig& cfg);
  ~FileStorage() override;

  bool write(const std::vector<Experience>& batch, double timeout_s = 1800.0) override;
  ReadResult read(const ReadRequest& req) override;
  bool ack(const std::string& lease) override;
  bool renew(const std::string& lease) override;
  void release(const std::string& lease) override;
  size_t set_reward(const std::vector<std::string>& uids, double reward) override;
  size_t set_group_reward(const std::string& group_id, double reward) override;
  void close() override;
  StorageStats stats() override;
  std::vector<Experience> scan(int64_t offset, int64_t limit) override;
  std::string state() override;
  void load_state(const std::string& state) override;
  std::string describe() const override;

  int64_t offset() const { return offset_; }

 private:
  void load_locked();  // (re)reads the file's lines
  StorageConfig cfg_;
  std::mutex mu_;
  FILE* out_ = nullptr;
  std::vector<std::string> lines_;  // non-empty lines
  std::vector<int64_t> line_no_;    // 1-based line number of each
  bool loaded_ = false;
  int64_t offset_ = 0;
  std::map<std::string, int64_t> leases_;  // lease -> offset before the read
};

}  // namespace trinity::buffer
