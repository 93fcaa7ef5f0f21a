// TFRecord framing, CRC32C and hand-encoded Event protobufs for TensorBoard (see tfevents.h).
// Protobuf wire format: key = (field << 3) | wire_type; 0 varint, 1 fixed64, 2 length-delimited,
// 5 fixed32; all fixed-width values little endian.
#include "monitor/tfevents.h"

#include <fcntl.h>
#include <unistd.h>

#include <array>
#include <cerrno>
#include <cstring>
#include <ctime>

#include "core/error.h"
#include "core/file.h"
#include "monitor/fd_io.h"

namespace trinity::monitor {
namespace {

constexpr std::array<uint32_t, 256> make_crc_table() {
  std::array<uint32_t, 256> t{};
  for (uint32_t i = 0; i < 256; ++i) {
    uint32_t c = i;
    for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;  // reflected Castagnoli
    t[i] = c;
  }
  return t;
}
constexpr auto kCrcTable = make_crc_table();

void put_le(std::string& out, uint64_t v, int bytes) {
  for (int i = 0; i < bytes; ++i) out.push_back(static_cast<char>((v >> (8 * i)) & 0xff));
}
void put_varint(std::string& out, uint64_t v) {
  while (v >= 0x80) {
    out.push_back(static_cast<char>((v & 0x7f) | 0x80));
    v >>= 7;
  }
  out.push_back(static_cast<char>(v));
}
void put_key(std::string& out, int field, int wire) { put_varint(out, (uint64_t(field) << 3) | uint64_t(wire)); }
void put_bytes(std::string& out, int field, std::string_view b) {
  put_key(out, field, 2);
  put_varint(out, b.size());
  out.append(b);
}
void put_double(std::string& out, int field, double v) {
  uint64_t bits;
  std::memcpy(&bits, &v, 8);
  put_key(out, field, 1);
  put_le(out, bits, 8);
}
void put_float(std::string& out, int field, float v) {
  uint32_t bits;
  std::memcpy(&bits, &v, 4);
  put_key(out, field, 5);
  put_le(out, bits, 4);
}
void put_int(std::string& out, int field, int64_t v) {
  put_key(out, field, 0);
  put_varint(out, static_cast<uint64_t>(v));  // int64: negative values take 10 bytes (two's complement)
}

std::string event_header(double wall_time, int64_t step) {
  std::string e;
  put_double(e, 1, wall_time);
  put_int(e, 2, step);
  return e;
}

std::string hostname() {
  char buf[256] = {0};
  if (gethostname(buf, sizeof(buf) - 1) != 0 || buf[0] == 0) return "localhost";
  std::string h(buf);
  for (char& c : h)
    if (c == '/') c = '_';
  return h;
}

}  // namespace

uint32_t crc32c(std::string_view bytes) {
  uint32_t c = 0xFFFFFFFFu;
  for (unsigned char b : bytes) c = kCrcTable[(c ^ b) & 0xff] ^ (c >> 8);
  return c ^ 0xFFFFFFFFu;
}

uint32_t masked_crc32c(std::string_view bytes) {
  const uint32_t c = crc32c(bytes);
  return ((c >> 15) | (c << 17)) + 0xa282ead8u;
}

std::string tfrecord(std::string_view data) {
  std::string out;
  out.reserve(data.size() + 16);
  put_le(out, data.size(), 8);
  put_le(out, masked_crc32c(std::string_view(out.data(), 8)), 4);
  out.append(data);
  put_le(out, masked_crc32c(data), 4);
  return out;
}

std::string event_file_version(double wall_time) {
  std::string e;
  put_double(e, 1, wall_time);
  put_bytes(e, 3, "brain.Event:2");
  return e;
}

std::string event_session_start(double wall_time, int64_t step) {
  std::string session_log;
  put_int(session_log, 1, 1);  // status = START
  std::string e = event_header(wall_time, step);
  put_bytes(e, 7, session_log);
  return e;
}

std::string event_scalars(double wall_time, int64_t step, const std::map<std::string, double>& values) {
  std::string summary;
  for (const auto& [tag, v] : values) {
    std::string value;
    put_bytes(value, 1, tag);
    put_float(value, 2, static_cast<float>(v));  // NaN/Inf keep their IEEE bits; TensorBoard shows them
    put_bytes(summary, 1, value);
  }
  std::string e = event_header(wall_time, step);
  put_bytes(e, 5, summary);
  return e;
}

std::string event_text(double wall_time, int64_t step, const std::string& tag, const std::string& text) {
  // TensorProto{dtype=1: DT_STRING(7), tensor_shape=2: {} (a scalar), string_val=8: text}
  std::string tensor;
  put_int(tensor, 1, 7);
  put_bytes(tensor, 2, "");
  put_bytes(tensor, 8, text);
  // SummaryMetadata{plugin_data=1: PluginData{plugin_name=1: "text"}}
  std::string plugin, metadata;
  put_bytes(plugin, 1, "text");
  put_bytes(metadata, 1, plugin);
  // Summary.Value{tag=1, metadata=9, tensor=8}
  std::string value;
  put_bytes(value, 1, tag);
  put_bytes(value, 9, metadata);
  put_bytes(value, 8, tensor);
  std::string summary;
  put_bytes(summary, 1, value);
  std::string e = event_header(wall_time, step);
  put_bytes(e, 5, summary);
  return e;
}

EventFileWriter::EventFileWriter(const std::string& dir) {
  file::make_dirs(dir);
  const std::string base = file::join(
      dir, strcat("events.out.tfevents.", static_cast<long long>(std::time(nullptr)), ".", hostname()));
  for (int n = 0; n < 1000 && fd_ < 0; ++n) {
    path_ = n == 0 ? base : strcat(base, ".", static_cast<long long>(getpid()), ".", n);
    fd_ = ::open(path_.c_str(), O_WRONLY | O_CREAT | O_EXCL | O_APPEND | O_CLOEXEC, 0644);
    if (fd_ < 0 && errno != EEXIST) break;
  }
  if (fd_ < 0) throw IoError("monitor", strcat("cannot create event file ", path_, ": ", std::strerror(errno)));
  const double now = unix_seconds();
  write_event(event_file_version(now));
}

EventFileWriter::~EventFileWriter() {
  if (fd_ >= 0) ::close(fd_);
}

void EventFileWriter::write_event(std::string_view event) {
  const std::string rec = tfrecord(event);
  std::lock_guard<std::mutex> lock(mu_);
  write_all(fd_, rec, path_);
}

}  // namespace trinity::monitor
