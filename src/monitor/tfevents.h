// TensorBoard event files written by hand: TFRecord framing (uint64 length, masked CRC32C of the
// length, payload, masked CRC32C of the payload; CRC32C = Castagnoli, mask = rotr15 + 0xa282ead8)
// around hand-encoded tensorflow.Event protobufs (event.proto / summary.proto field numbers:
// Event{wall_time=1 double, step=2 int64, file_version=3 string, summary=5, session_log=7},
// SessionLog{status=1 enum}, Summary{value=1},
// Summary.Value{tag=1, simple_value=2 float}). Readable by `tensorboard --logdir`.
#pragma once

#include <cstdint>
#include <map>
#include <mutex>
#include <string>
#include <string_view>

namespace trinity::monitor {

uint32_t crc32c(std::string_view bytes);
uint32_t masked_crc32c(std::string_view bytes);
// One TFRecord: [u64 len][u32 masked_crc(len)][data][u32 masked_crc(data)], little endian.
std::string tfrecord(std::string_view data);

// Serialized Event protos.
std::string event_file_version(double wall_time);  // file_version = "brain.Event:2"
std::string event_scalars(double wall_time, int64_t step, const std::map<std::string, double>& values);
// SessionLog{status=1 START} as Event field 7 at `step`: a restart marker. TensorBoard
// (purge_orphaned_data, on by default) then drops the points of this run's earlier event files whose
// step is >= `step`, i.e. the steps a resumed run logs again.
std::string event_session_start(double wall_time, int64_t step);
// A text summary (tensorboard "text" plugin: string tensor with plugin_data.plugin_name = "text").
std::string event_text(double wall_time, int64_t step, const std::string& tag, const std::string& text);

// Appends records to <dir>/events.out.tfevents.<unix>.<hostname>[.<pid>.<n>] (the suffix only when
// the plain name already exists). Each record goes out in one write(); thread-safe.
class EventFileWriter {
 public:
  explicit EventFileWriter(const std::string& dir);
  ~EventFileWriter();
  EventFileWriter(const EventFileWriter&) = delete;
  EventFileWriter& operator=(const EventFileWriter&) = delete;

  void write_event(std::string_view event);
  const std::string& path() const { return path_; }

 private:
  std::mutex mu_;
  int fd_ = -1;
  std::string path_;
};

}  // namespace trinity::monitor
