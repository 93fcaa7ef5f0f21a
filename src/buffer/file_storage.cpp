// JSONL experience file (see file_storage.h). Each write batch is appended and flushed with one fwrite,
// then fsync'd, so a crash leaves at most a torn last line, which the reader reports by line number.
#include "buffer/file_storage.h"

#include <unistd.h>

#include <cerrno>
#include <cstring>

#include "buffer/json_util.h"
#include "core/error.h"
#include "core/file.h"

namespace trinity::buffer {

using detail::json;

FileStorage::FileStorage(const StorageConfig& cfg) : cfg_(cfg) {
  if (cfg_.path.empty()) throw ConfigError("buffer", strcat("file buffer '", cfg_.name, "': path is empty"));
  const std::string& p = cfg_.path;
  if (p.size() >= 8 && p.compare(p.size() - 8, 8, ".parquet") == 0)
    throw UnsupportedError(
        "buffer", strcat("'", p, "': parquet experience buffers are not supported (tasksets and SFT/DPO datasets ",
                         "do read parquet); use a .jsonl file or sqlite"));
}

FileStorage::~FileStorage() {
  if (out_) std::fclose(out_);
}

std::string FileStorage::describe() const { return strcat("file buffer '", cfg_.path, "'"); }

bool FileStorage::write(const std::vector<Experience>& batch, double) {
  std::string text;
  for (const auto& e : batch) text += experience_to_json(e, true) + "\n";
  std::lock_guard<std::mutex> lock(mu_);
  if (!out_) {
    out_ = std::fopen(cfg_.path.c_str(), "ab");
    if (!out_) throw IoError("buffer", strcat("cannot open '", cfg_.path, "' for append: ", std::strerror(errno)));
  }
  if (std::fwrite(text.data(), 1, text.size(), out_) != text.size() || std::fflush(out_) != 0)
    throw IoError("buffer", strcat("cannot write '", cfg_.path, "': ", std::strerror(errno)));
  ::fsync(::fileno(out_));
  loaded_ = false;  // a reader on the same object sees the new lines
  return true;
}

void FileStorage::load_locked() {
  if (loaded_) return;
  if (!file::exists(cfg_.path)) throw IoError("buffer", strcat("'", cfg_.path, "': no such file"));
  const std::string all = file::read_all(cfg_.path);
  lines_.clear();
  line_no_.clear();
  size_t pos = 0;
  int64_t no = 0;
  while (pos < all.size()) {
    size_t nl = all.find('\n', pos);
    if (nl == std::string::npos) nl = all.size();
    ++no;
    std::string line = all.substr(pos, nl - pos);
    if (!line.empty() && line.back() == '\r') line.pop_back();
    if (line.find_first_not_of(" \t") != std::string::npos) {
      lines_.push_back(std::move(line));
      line_no_.push_back(no);
    }
    pos = nl + 1;
  }
  loaded_ = true;
}

ReadResult FileStorage::read(const ReadRequest& req) {
  std::lock_guard<std::mutex> lock(mu_);
  load_locked();
  ReadResult r;
  const auto n_lines = static_cast<int64_t>(lines_.size());
  const int64_t start = offset_;
  int64_t i = offset_;
  while (i < n_lines && r.batch.size() < req.batch_size) {
    Experience e = experience_from_json(lines_[static_cast<size_t>(i)],
                                        strcat(cfg_.path, ":", line_no_[static_cast<size_t>(i)]));
    ++i;
    if (req.min_model_version && e.model_version < *req.min_model_version) continue;
    r.batch.push_back(std::move(e));
  }
  offset_ = i;
  if (r.batch.size() == req.batch_size) {
    r.status = ReadStatus::kOk;
  } else {
    r.status = ReadStatus::kClosed;  // end of file: the remainder (maybe empty)
  }
  if (!r.batch.empty()) {
    r.lease = strcat("f", start);
    leases_[r.lease] = start;
  }
  return r;
}

bool FileStorage::ack(const std::string& lease) {
  std::lock_guard<std::mutex> lock(mu_);
  return leases_.erase(lease) > 0;
}

bool FileStorage::renew(const std::string& lease) {
  std::lock_guard<std::mutex> lock(mu_);
  return leases_.count(lease) > 0;  // file leases never expire
}

void FileStorage::release(const std::string& lease) {
  std::lock_guard<std::mutex> lock(mu_);
  auto it = leases_.find(lease);
  if (it == leases_.end()) return;
  offset_ = std::min(offset_, it->second);
  leases_.erase(it);
}

size_t FileStorage::set_reward(const std::vector<std::string>&, double) {
  throw UnsupportedError("buffer", strcat(describe(), ": delayed rewards need a queue or sqlite buffer"));
}

size_t FileStorage::set_group_reward(const std::string&, double) {
  throw UnsupportedError("buffer", strcat(describe(), ": delayed rewards need a queue or sqlite buffer"));
}

void FileStorage::close() {
  std::lock_guard<std::mutex> lock(mu_);
  if (out_) std::fclose(out_);
  out_ = nullptr;
}

StorageStats FileStorage::stats() {
  StorageStats s;
  std::vector<Experience> all = scan(0, INT64_MAX);
  std::lock_guard<std::mutex> lock(mu_);
  for (size_t i = 0; i < all.size(); ++i) {
    const auto& e = all[i];
    s.total++;
    if (e.pending()) s.pending++;
    else if (static_cast<int64_t>(i) < offset_) s.consumed++;
    else s.ready++;
    s.by_model_version[e.model_version]++;
    if (e.reward) s.rewards.push_back(*e.reward);
  }
  return s;
}

std::vector<Experience> FileStorage::scan(int64_t offset, int64_t limit) {
  std::lock_guard<std::mutex> lock(mu_);
  load_locked();
  std::vector<Experience> out;
  for (int64_t i = std::max<int64_t>(offset, 0); i < static_cast<int64_t>(lines_.size()) && static_cast<int64_t>(out.size()) < limit; ++i)
    out.push_back(experience_from_json(lines_[static_cast<size_t>(i)], strcat(cfg_.path, ":", line_no_[static_cast<size_t>(i)])));
  return out;
}

std::string FileStorage::state() {
  std::lock_guard<std::mutex> lock(mu_);
  return json({{"kind", "file"}, {"path", cfg_.path}, {"offset", offset_}}).dump();
}

void FileStorage::load_state(const std::string& state) {
  const json j = detail::parse_json(state, describe() + " state");
  if (!j.is_object() || j.value("kind", "") != "file" || !j.contains("offset"))
    throw ValueError("buffer", strcat(describe(), ": state is not a file reader state: ", state));
  std::lock_guard<std::mutex> lock(mu_);
  offset_ = j.at("offset").get<int64_t>();
  leases_.clear();
}

}  // namespace trinity::buffer
