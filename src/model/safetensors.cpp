// safetensors reading (mmap, header validation, sharded index) and streaming atomic writing.
// Validation mirrors the reference implementation (huggingface/safetensors): header length within
// the file and <= 100 MB, JSON object, every data_offsets range inside the data block and exactly
// numel * dtype_size bytes, no two tensors overlapping. Writing follows its layout: compact header
// JSON ("__metadata__" first), padded with spaces to a multiple of 8 bytes, tensors laid out in
// name order. The mapping is MAP_PRIVATE + PROT_WRITE, so a stray write to a view copies the page
// and never reaches the file.
#include "model/safetensors.h"

#include <fcntl.h>
#include <sys/mman.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>
#include <bit>
#include <cerrno>
#include <cstring>
#include <set>

#include <nlohmann/json.hpp>

#include "core/error.h"
#include "core/file.h"
#include "core/json_limits.h"

namespace trinity::model {

using json = nlohmann::json;
using tensor::DType;
using tensor::Tensor;

namespace {

static_assert(std::endian::native == std::endian::little, "safetensors IO assumes a little-endian host");

constexpr uint64_t kMaxHeader = 100'000'000;  // as the reference implementation

[[noreturn]] void fail_file(const std::string& path, const std::string& msg) {
  throw IoError("safetensors", strcat(path, ": ", msg));
}

struct Mapping {
  void* base = nullptr;
  size_t size = 0;
  ~Mapping() {
    if (base) ::munmap(base, size);
  }
};

bool parse_dtype(const std::string& s, DType* out) {
  if (s == "F32") *out = DType::kF32;
  else if (s == "BF16") *out = DType::kBF16;
  else if (s == "F16") *out = DType::kF16;
  else return false;
  return true;
}

}  // namespace

SafetensorsFile SafetensorsFile::open(const std::string& path) {
  SafetensorsFile f;
  f.path_ = path;
  const int fd = ::open(path.c_str(), O_RDONLY | O_CLOEXEC);
  if (fd < 0) fail_file(path, strcat("cannot open: ", std::strerror(errno)));
  struct stat st;
  if (::fstat(fd, &st) != 0) {
    const int e = errno;
    ::close(fd);
    fail_file(path, strcat("cannot stat: ", std::strerror(e)));
  }
  const uint64_t size = static_cast<uint64_t>(st.st_size);
  if (size < 8) {
    ::close(fd);
    fail_file(path, strcat("file is ", size, " bytes, too short for a safetensors header (truncated?)"));
  }
  auto map = std::make_shared<Mapping>();
  map->base = ::mmap(nullptr, size, PROT_READ | PROT_WRITE, MAP_PRIVATE, fd, 0);
  const int map_errno = errno;
  ::close(fd);
  if (map->base == MAP_FAILED) {
    map->base = nullptr;
    fail_file(path, strcat("cannot mmap: ", std::strerror(map_errno)));
  }
  map->size = size;
  auto* bytes = static_cast<uint8_t*>(map->base);

  uint64_t n = 0;
  for (int i = 7; i >= 0; --i) n = (n << 8) | bytes[i];  // little-endian u64
  if (n > kMaxHeader) fail_file(path, strcat("header length ", n, " exceeds the 100 MB limit (corrupt header?)"));
  if (8 + n > size)
    fail_file(path, strcat("header length ", n, " exceeds the file size ", size, " (truncated or corrupt file)"));
  const uint64_t data_size = size - 8 - n;
  uint8_t* data = bytes + 8 + n;

  json h;
  if (json_depth(std::string_view(reinterpret_cast<const char*>(bytes + 8), n)) > kMaxJsonDepth)
    fail_file(path, strcat("header JSON nested deeper than ", kMaxJsonDepth, " levels (corrupt file)"));
  try {
    h = json::parse(reinterpret_cast<const char*>(bytes + 8), reinterpret_cast<const char*>(data));
  } catch (const json::parse_error& e) {
    fail_file(path, strcat("malformed header JSON: ", e.what()));
  }
  if (!h.is_object()) fail_file(path, "malformed header: expected a JSON object");

  struct Range {
    uint64_t begin, end;
    std::string name;
  };
  std::vector<Range> ranges;
  for (auto it = h.begin(); it != h.end(); ++it) {
    const std::string& name = it.key();
    const json& e = it.value();
    if (name == "__metadata__") {
      if (!e.is_object()) fail_file(path, "malformed header: __metadata__ must be an object");
      for (auto m = e.begin(); m != e.end(); ++m)
        f.metadata_[m.key()] = m.value().is_string() ? m.value().get<std::string>() : m.value().dump();
      continue;
    }
    auto bad = [&](const std::string& what) { fail_file(path, strcat("tensor '", name, "': ", what)); };
    if (!e.is_object()) bad("header entry must be an object");
    if (!e.contains("dtype") || !e["dtype"].is_string()) bad("missing or non-string 'dtype'");
    const std::string ds = e["dtype"].get<std::string>();
    DType dt;
    if (!parse_dtype(ds, &dt))
      bad(strcat("dtype ", ds, " is not supported (trinity reads F32, BF16, F16)"));
    if (!e.contains("shape") || !e["shape"].is_array()) bad("missing or non-list 'shape'");
    std::vector<int64_t> shape;
    uint64_t numel = 1;
    for (const json& d : e["shape"]) {
      if (!d.is_number_unsigned() && !(d.is_number_integer() && d.get<int64_t>() >= 0))
        bad(strcat("shape entry ", d.dump(), " is not a non-negative integer"));
      const uint64_t v = d.get<uint64_t>();
      if (v != 0 && numel > (uint64_t{1} << 62) / v) bad("shape is too large");
      numel *= v;
      shape.push_back(static_cast<int64_t>(v));
    }
    if (!e.contains("data_offsets") || !e["data_offsets"].is_array() || e["data_offsets"].size() != 2 ||
        !e["data_offsets"][0].is_number_unsigned() || !e["data_offsets"][1].is_number_unsigned())
      bad("'data_offsets' must be [begin, end] with non-negative integers");
    const uint64_t b = e["data_offsets"][0].get<uint64_t>(), en = e["data_offsets"][1].get<uint64_t>();
    if (b > en) bad(strcat("data_offsets [", b, ", ", en, "] has begin > end"));
    if (en > data_size)
      bad(strcat("data_offsets [", b, ", ", en, "] run past the data block of ", data_size,
                 " bytes (truncated file?)"));
    const uint64_t need = numel * tensor::dtype_size(dt);
    if (en - b != need)
      bad(strcat("data_offsets [", b, ", ", en, "] span ", en - b, " bytes but shape ", tensor::shape_str(shape),
                 " of ", ds, " needs ", need));
    ranges.push_back({b, en, name});
    void* p = data + b;
    if (reinterpret_cast<uintptr_t>(p) % tensor::dtype_size(dt) != 0) {
      // Misaligned for its element type (a foreign writer): copy into aligned storage.
      Tensor t(dt, shape);
      std::memcpy(t.data(), p, need);
      f.tensors_.emplace(name, std::move(t));
    } else {
      f.tensors_.emplace(name, Tensor::view(dt, std::move(shape), p, map));
    }
  }
  std::sort(ranges.begin(), ranges.end(),
            [](const Range& a, const Range& b) { return a.begin != b.begin ? a.begin < b.begin : a.end < b.end; });
  const Range* last = nullptr;  // the non-empty range reaching furthest so far
  for (const Range& b : ranges) {
    if (b.begin == b.end) continue;
    if (last && b.begin < last->end)
      fail_file(path, strcat("tensors '", last->name, "' [", last->begin, ", ", last->end, ") and '", b.name, "' [",
                             b.begin, ", ", b.end, ") overlap (corrupt header)"));
    if (!last || b.end > last->end) last = &b;
  }
  return f;
}

std::vector<std::string> SafetensorsFile::names() const {
  std::vector<std::string> out;
  out.reserve(tensors_.size());
  for (const auto& [k, v] : tensors_) out.push_back(k);
  return out;
}

const Tensor& SafetensorsFile::get(const std::string& name) const {
  auto it = tensors_.find(name);
  if (it == tensors_.end()) fail_file(path_, strcat("no tensor '", name, "'"));
  return it->second;
}

// ---------------------------------------------------------------------------------------------

WeightSource WeightSource::open_dir(const std::string& model_dir) {
  WeightSource ws;
  ws.dir_ = model_dir;
  auto add_file = [&](const std::string& path) {
    auto f = std::make_shared<SafetensorsFile>(SafetensorsFile::open(path));
    const size_t idx = ws.files_.size();
    for (const std::string& n : f->names()) {
      auto [it, inserted] = ws.where_.emplace(n, idx);
      if (!inserted) fail_file(path, strcat("tensor '", n, "' is also in ", ws.files_[it->second]->path()));
    }
    ws.files_.push_back(std::move(f));
  };

  if (!file::is_dir(model_dir)) {
    if (file::exists(model_dir) && model_dir.size() > 12 &&
        model_dir.compare(model_dir.size() - 12, 12, ".safetensors") == 0) {
      add_file(model_dir);  // a single .safetensors file given directly
      return ws;
    }
    fail_file(model_dir, "not a directory");
  }
  const std::string index = file::join(model_dir, "model.safetensors.index.json");
  const std::string single = file::join(model_dir, "model.safetensors");
  // Like transformers: a single model.safetensors wins over an index.
  if (file::exists(single)) {
    add_file(single);
    return ws;
  }
  if (file::exists(index)) {
    json j;
    try {
      const std::string index_text = file::read_all(index);
      check_json_depth(index_text, index, kMaxJsonDepth, "safetensors");
      j = json::parse(index_text);
    } catch (const json::parse_error& e) {
      fail_file(index, strcat("malformed JSON: ", e.what()));
    }
    if (!j.is_object() || !j.contains("weight_map") || !j["weight_map"].is_object())
      fail_file(index, "missing 'weight_map' object");
    std::map<std::string, std::vector<std::string>> by_shard;  // shard -> tensor names
    for (auto it = j["weight_map"].begin(); it != j["weight_map"].end(); ++it) {
      if (!it.value().is_string())
        fail_file(index, strcat("weight_map entry for tensor '", it.key(), "' must be a file name"));
      by_shard[it.value().get<std::string>()].push_back(it.key());
    }
    if (by_shard.empty()) fail_file(index, "weight_map is empty");
    for (const auto& [shard, names] : by_shard) {
      const std::string p = file::join(model_dir, shard);
      if (!file::exists(p))
        fail_file(index, strcat("shard '", shard, "' (holding tensor '", names.front(), "' and ", names.size() - 1,
                                " more) is missing: ", p));
      add_file(p);
      for (const std::string& n : names)
        if (!ws.files_.back()->contains(n))
          fail_file(p, strcat("no tensor '", n, "' (listed for this shard in ", index, ")"));
    }
    return ws;
  }
  fail_file(model_dir, "no model.safetensors or model.safetensors.index.json");
}

std::vector<std::string> WeightSource::names() const {
  std::vector<std::string> out;
  out.reserve(where_.size());
  for (const auto& [k, v] : where_) out.push_back(k);
  return out;
}

bool WeightSource::contains(const std::string& name) const { return where_.count(name) != 0; }

const Tensor& WeightSource::get(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) {
    const std::string where = files_.size() == 1 ? files_[0]->path() : dir_;
    fail_file(where, strcat("no tensor '", name, "'"));
  }
  return files_[it->second]->get(name);
}

std::string WeightSource::file_of(const std::string& name) const {
  auto it = where_.find(name);
  if (it == where_.end()) return "";
  return files_[it->second]->path();
}

void WeightSource::check_shape(const std::string& name, const std::vector<int64_t>& shape) const {
  const Tensor& t = get(name);
  if (t.shape() != shape)
    fail_file(file_of(name),
              strcat("tensor '", name, "' has shape ", t.shape_str(), ", expected ", tensor::shape_str(shape)));
}

Tensor WeightSource::get_f32(const std::string& name, const std::vector<int64_t>& shape) const {
  check_shape(name, shape);
  return get(name).to_f32();
}

// ---------------------------------------------------------------------------------------------

namespace {

// Streams bytes to <path>.tmp.<pid>; commit() fsyncs and renames over <path>. Destroyed
// uncommitted (an exception), it removes the temp file.
class AtomicWriter {
 public:
  explicit AtomicWriter(std::string path) : path_(std::move(path)), tmp_(strcat(path_, ".tmp.", ::getpid())) {
    fd_ = ::open(tmp_.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
    if (fd_ < 0) fail_file(path_, strcat("cannot create '", tmp_, "': ", std::strerror(errno)));
  }
  AtomicWriter(const AtomicWriter&) = delete;
  AtomicWriter& operator=(const AtomicWriter&) = delete;
  ~AtomicWriter() {
    if (fd_ >= 0) ::close(fd_);
    if (!committed_) ::unlink(tmp_.c_str());
  }
  void write(const void* p, size_t n) {
    const char* c = static_cast<const char*>(p);
    while (n > 0) {
      const ssize_t w = ::write(fd_, c, std::min<size_t>(n, size_t{1} << 30));
      if (w < 0) {
        if (errno == EINTR) continue;
        fail_file(path_, strcat("cannot write '", tmp_, "': ", std::strerror(errno)));
      }
      c += w;
      n -= static_cast<size_t>(w);
    }
  }
  void commit() {
    if (::fsync(fd_) != 0) fail_file(path_, strcat("cannot fsync '", tmp_, "': ", std::strerror(errno)));
    const int rc = ::close(fd_);
    fd_ = -1;
    if (rc != 0) fail_file(path_, strcat("cannot close '", tmp_, "': ", std::strerror(errno)));
    if (::rename(tmp_.c_str(), path_.c_str()) != 0)
      fail_file(path_, strcat("cannot rename '", tmp_, "' into place: ", std::strerror(errno)));
    committed_ = true;
    // Make the rename durable.
    const size_t slash = path_.rfind('/');
    const std::string dir = slash == std::string::npos ? "." : (slash == 0 ? "/" : path_.substr(0, slash));
    const int dfd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY | O_CLOEXEC);
    if (dfd >= 0) {
      ::fsync(dfd);
      ::close(dfd);
    }
  }

 private:
  std::string path_, tmp_;
  int fd_ = -1;
  bool committed_ = false;
};

}  // namespace

void write_safetensors(const std::string& path, const std::vector<NamedTensor>& tensors, DType dtype,
                       const std::map<std::string, std::string>& metadata) {
  std::vector<const NamedTensor*> order;
  std::set<std::string> seen;
  for (const NamedTensor& nt : tensors) {
    TRINITY_ASSERT(nt.tensor != nullptr, "write_safetensors: null tensor for '", nt.name, "'");
    if (nt.name.empty() || nt.name == "__metadata__") fail_file(path, strcat("invalid tensor name '", nt.name, "'"));
    if (!seen.insert(nt.name).second) fail_file(path, strcat("tensor '", nt.name, "' given twice"));
    order.push_back(&nt);
  }
  std::sort(order.begin(), order.end(), [](const NamedTensor* a, const NamedTensor* b) { return a->name < b->name; });

  const size_t esize = tensor::dtype_size(dtype);
  nlohmann::ordered_json h;
  if (!metadata.empty()) {
    nlohmann::ordered_json m = nlohmann::ordered_json::object();
    for (const auto& [k, v] : metadata) m[k] = v;
    h["__metadata__"] = m;
  }
  uint64_t off = 0;
  for (const NamedTensor* nt : order) {
    const uint64_t nb = static_cast<uint64_t>(nt->tensor->numel()) * esize;
    h[nt->name] = {{"dtype", tensor::dtype_name(dtype)},
                   {"shape", nt->tensor->shape()},
                   {"data_offsets", {off, off + nb}}};
    off += nb;
  }
  std::string header = h.dump();
  header.append((8 - header.size() % 8) % 8, ' ');
  uint8_t len[8];
  for (int i = 0; i < 8; ++i) len[i] = static_cast<uint8_t>(static_cast<uint64_t>(header.size()) >> (8 * i));

  AtomicWriter w(path);
  w.write(len, 8);
  w.write(header.data(), header.size());
  constexpr int64_t kChunk = 1 << 20;  // elements converted per write
  std::vector<float> f32buf;
  std::vector<uint16_t> h16buf;
  for (const NamedTensor* nt : order) {
    Tensor made;
    if (nt->make) {
      made = nt->make();
      TRINITY_ASSERT(made.shape() == nt->tensor->shape(), "write_safetensors: made tensor '", nt->name,
                     "' has another shape");
    }
    const Tensor& t = nt->make ? made : *nt->tensor;
    const int64_t n = t.numel();
    if (t.dtype() == dtype) {
      w.write(t.data(), t.nbytes());
      continue;
    }
    const size_t in_size = tensor::dtype_size(t.dtype());
    const auto* src = static_cast<const uint8_t*>(t.data());
    for (int64_t i = 0; i < n; i += kChunk) {
      const int64_t m = std::min(kChunk, n - i);
      f32buf.resize(static_cast<size_t>(m));
      tensor::convert_to_f32(f32buf.data(), src + static_cast<size_t>(i) * in_size, t.dtype(), m);
      if (dtype == DType::kF32) {
        w.write(f32buf.data(), static_cast<size_t>(m) * 4);
        continue;
      }
      h16buf.resize(static_cast<size_t>(m));
      if (dtype == DType::kBF16)
        for (int64_t k = 0; k < m; ++k) h16buf[k] = tensor::f32_to_bf16(f32buf[k]);
      else
        for (int64_t k = 0; k < m; ++k) h16buf[k] = tensor::f32_to_f16(f32buf[k]);
      w.write(h16buf.data(), static_cast<size_t>(m) * 2);
    }
  }
  w.commit();
}

}  // namespace trinity::model
