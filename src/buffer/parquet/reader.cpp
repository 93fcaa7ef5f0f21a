// ParquetFile (see reader.h): footer parsing, column projection, per-row-group decode and assembly.
#include "buffer/parquet/reader.h"

#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <cerrno>
#include <cstring>
#include <exception>

#include "buffer/parquet/column_reader.h"
#include "buffer/parquet/metadata.h"
#include "buffer/parquet/record.h"
#include "buffer/parquet/schema.h"
#include "core/error.h"
#include "core/parallel.h"

namespace trinity::buffer::parquet {

namespace {

class Fd {
 public:
  explicit Fd(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    if (fd_ < 0) throw IoError("parquet", strcat("cannot open '", path, "': ", std::strerror(errno)));
  }
  ~Fd() { ::close(fd_); }
  Fd(const Fd&) = delete;
  Fd& operator=(const Fd&) = delete;
  int get() const { return fd_; }

 private:
  int fd_;
};

}  // namespace

struct ParquetFile::Impl {
  std::string path;
  std::unique_ptr<Fd> fd;
  uint64_t size = 0;
  FileMetaData meta;
  std::unique_ptr<Schema> schema;
  std::vector<ColumnInfo> columns;

  void pread_all(uint8_t* dst, uint64_t n, uint64_t off) const {
    while (n > 0) {
      const ssize_t r = ::pread(fd->get(), dst, n, static_cast<off_t>(off));
      if (r < 0 && errno == EINTR) continue;
      if (r <= 0)
        throw IoError("parquet", strcat(path, ": read of ", n, " bytes at offset ", off, " failed (truncated file?)"));
      dst += r;
      n -= static_cast<uint64_t>(r);
      off += static_cast<uint64_t>(r);
    }
  }

  std::vector<int> select(const std::vector<std::string>& names) const {
    const auto& top = schema->top();
    std::vector<int> out;
    if (names.empty()) {
      for (size_t i = 0; i < top.size(); ++i) out.push_back(static_cast<int>(i));
      return out;
    }
    for (const auto& n : names) {
      int found = -1;
      for (size_t i = 0; i < top.size(); ++i)
        if (columns[i].name == n) found = static_cast<int>(i);
      if (found < 0) {
        std::string have;
        for (const auto& c : columns) have += (have.empty() ? "" : ", ") + c.name;
        throw ValueError("parquet", strcat(path, ": no column '", n, "' (columns: ", have, ")"));
      }
      out.push_back(found);
    }
    return out;
  }

  // Decodes row group g for the top-level columns `sel` into out (rows appended).
  void read_group(int64_t g, const std::vector<int>& sel, const std::vector<Field>& plan,
                  std::vector<std::string>& rows, std::vector<uint8_t>& non_null) const {
    const RowGroup& rg = meta.row_groups[static_cast<size_t>(g)];
    const auto& leaves = schema->leaves();
    std::vector<ColumnData> data(leaves.size());
    std::vector<const ColumnData*> ptrs(leaves.size(), nullptr);
    std::unique_ptr<uint8_t[]> chunk;  // uninitialised: a vector would zero-fill what pread overwrites
    size_t chunk_cap = 0;
    for (const Field& f : plan) {
      for (int l : f.leaves) {
        const LeafInfo& li = leaves[static_cast<size_t>(l)];
        const std::string ctx = strcat(path, ": column '", li.path, "' (row group ", g, ")");
        const ColumnChunk& cc = rg.columns[static_cast<size_t>(l)];
        if (!cc.file_path.empty())
          throw UnsupportedError("parquet",
                                 strcat(ctx, ": column data in another file ('", cc.file_path, "') is not supported"));
        if (!cc.has_meta) throw IoError("parquet", strcat(ctx, ": column chunk has no metadata (encrypted?)"));
        const ColumnMetaData& m = cc.meta;
        if (m.type != static_cast<int32_t>(li.physical))
          throw IoError("parquet", strcat(ctx, ": chunk type ", type_name(m.type), " differs from the schema's ",
                                          type_name(static_cast<int32_t>(li.physical))));
        int64_t start = m.data_page_offset;
        if (m.dictionary_page_offset > 0 && m.dictionary_page_offset < start) start = m.dictionary_page_offset;
        const int64_t len = m.total_compressed_size;
        if (start < 4 || len < 0 || static_cast<uint64_t>(start) > size ||
            static_cast<uint64_t>(len) > size - static_cast<uint64_t>(start))
          throw IoError("parquet", strcat(ctx, ": column chunk [", start, ", +", len, ") lies outside the file (", size,
                                          " bytes)"));
        if (static_cast<size_t>(len) > chunk_cap) {
          chunk_cap = static_cast<size_t>(len);
          chunk = std::make_unique_for_overwrite<uint8_t[]>(chunk_cap);
        }
        pread_all(chunk.get(), static_cast<uint64_t>(len), static_cast<uint64_t>(start));
        read_column_chunk(chunk.get(), static_cast<size_t>(len), m, li, data[static_cast<size_t>(l)], ctx);
        ptrs[static_cast<size_t>(l)] = &data[static_cast<size_t>(l)];
      }
    }
    const size_t n_rows = static_cast<size_t>(rg.num_rows);
    for (const Field& f : plan)  // every row takes at least one level of each column
      for (int l : f.leaves)
        if (data[static_cast<size_t>(l)].n_levels < n_rows)
          throw IoError("parquet",
                        strcat(path, ": column '", leaves[static_cast<size_t>(l)].path, "' (row group ", g, ") holds ",
                               data[static_cast<size_t>(l)].n_levels, " values for ", n_rows, " rows"));
    // Reserve each row's text up front (value bytes + ~12 characters per number + keys): growing
    // rows by doubling costs several allocations and copies per row.
    size_t est = 2;
    if (n_rows > 0) {
      size_t payload = 0;
      for (const Field& f : plan) {
        est += f.key.size() + 1;
        for (int l : f.leaves) {
          const ColumnData& d = data[static_cast<size_t>(l)];
          payload += d.values.bytes.size() + d.values.bytes.size() / 32 + 12 * d.values.size + 4 * d.n_levels;
        }
      }
      est += payload / n_rows;
    }
    RowAssembler as(plan, leaves, ptrs, strcat(path, " (row group ", g, ")"));
    const size_t at = rows.size();
    rows.resize(at + n_rows);
    non_null.resize((at + n_rows) * sel.size());
    for (size_t r = 0; r < n_rows; ++r) {
      rows[at + r].reserve(est);
      as.next_row(rows[at + r], non_null.data() + (at + r) * sel.size());
    }
    as.finish();
  }

  RowBatch read(const std::vector<std::string>& names, int64_t only_group) const {
    const std::vector<int> sel = select(names);
    std::vector<Field> plan;
    RowBatch out;
    for (int i : sel) {
      plan.push_back(make_field_plan(*schema, schema->top()[static_cast<size_t>(i)]));
      out.columns.push_back(columns[static_cast<size_t>(i)].name);
    }
    const int64_t first = only_group < 0 ? 0 : only_group;
    const int64_t n = only_group < 0 ? static_cast<int64_t>(meta.row_groups.size()) : 1;
    std::vector<std::vector<std::string>> rows(static_cast<size_t>(n));
    std::vector<std::vector<uint8_t>> nn(static_cast<size_t>(n));
    std::vector<std::exception_ptr> errs(static_cast<size_t>(n));
    parallel_for_dynamic(
        n,
        [&](int64_t i) {
          try {
            read_group(first + i, sel, plan, rows[static_cast<size_t>(i)], nn[static_cast<size_t>(i)]);
          } catch (...) {
            errs[static_cast<size_t>(i)] = std::current_exception();
          }
        },
        kParallelMinWork);
    for (auto& e : errs)
      if (e) std::rethrow_exception(e);
    size_t total = 0;
    for (auto& r : rows) total += r.size();
    out.rows.reserve(total);
    out.non_null.reserve(total * sel.size());
    for (size_t i = 0; i < rows.size(); ++i) {
      for (auto& r : rows[i]) out.rows.push_back(std::move(r));
      out.non_null.insert(out.non_null.end(), nn[i].begin(), nn[i].end());
      std::vector<std::string>().swap(rows[i]);
    }
    return out;
  }
};

ParquetFile::ParquetFile(const std::string& path) : impl_(std::make_unique<Impl>()) {
  Impl& m = *impl_;
  m.path = path;
  m.fd = std::make_unique<Fd>(path);
  struct stat st;
  if (::fstat(m.fd->get(), &st) != 0)
    throw IoError("parquet", strcat("cannot stat '", path, "': ", std::strerror(errno)));
  m.size = static_cast<uint64_t>(st.st_size);
  if (m.size < 12)
    throw IoError("parquet",
                  strcat(path, ": not a parquet file (", m.size, " bytes; too short for the PAR1 header and footer)"));
  uint8_t head[4], tail[8];
  m.pread_all(head, 4, 0);
  m.pread_all(tail, 8, m.size - 8);
  if (std::memcmp(tail + 4, "PARE", 4) == 0)
    throw UnsupportedError("parquet", strcat(path, ": encrypted parquet files (PARE footer) are not supported"));
  if (std::memcmp(head, "PAR1", 4) != 0 || std::memcmp(tail + 4, "PAR1", 4) != 0)
    throw IoError("parquet", strcat(path, ": not a parquet file (missing PAR1 magic at the ",
                                    std::memcmp(head, "PAR1", 4) != 0 ? "start" : "end", "; truncated?)"));
  uint32_t flen;
  std::memcpy(&flen, tail, 4);
  if (flen > m.size - 12)
    throw IoError("parquet", strcat(path, ": footer length ", flen, " exceeds the file (", m.size, " bytes)"));
  std::vector<uint8_t> footer(flen);
  m.pread_all(footer.data(), flen, m.size - 8 - flen);
  m.meta = parse_file_metadata(footer.data(), footer.size(), path);
  m.schema = std::make_unique<Schema>(m.meta.schema, path);
  const size_t n_leaves = m.schema->leaves().size();
  int64_t rows = 0;
  for (size_t g = 0; g < m.meta.row_groups.size(); ++g) {
    const RowGroup& rg = m.meta.row_groups[g];
    if (rg.columns.size() != n_leaves)
      throw IoError("parquet", strcat(path, ": row group ", g, " has ", rg.columns.size(),
                                      " column chunks, the schema ", n_leaves, " leaf columns"));
    if (rg.num_rows < 0) throw IoError("parquet", strcat(path, ": row group ", g, " has ", rg.num_rows, " rows"));
    rows += rg.num_rows;
  }
  if (rows != m.meta.num_rows && !m.meta.row_groups.empty())
    throw IoError("parquet", strcat(path, ": row groups hold ", rows, " rows, the footer says ", m.meta.num_rows));
  for (int id : m.schema->top()) {
    const SchemaNode& n = m.schema->node(id);
    m.columns.push_back({n.elem->name, m.schema->type_text(id), n.repetition == Repetition::kOptional});
  }
}

ParquetFile::~ParquetFile() = default;

const std::string& ParquetFile::path() const {
  return impl_->path;
}
int64_t ParquetFile::num_rows() const {
  return impl_->meta.num_rows;
}
int64_t ParquetFile::num_row_groups() const {
  return static_cast<int64_t>(impl_->meta.row_groups.size());
}
const std::vector<ColumnInfo>& ParquetFile::columns() const {
  return impl_->columns;
}

RowBatch ParquetFile::read(const std::vector<std::string>& columns) const {
  return impl_->read(columns, -1);
}

RowBatch ParquetFile::read_row_group(int64_t g, const std::vector<std::string>& columns) const {
  if (g < 0 || g >= num_row_groups())
    throw ValueError("parquet",
                     strcat(impl_->path, ": row group ", g, " out of range (", num_row_groups(), " row groups)"));
  return impl_->read(columns, g);
}

}  // namespace trinity::buffer::parquet
