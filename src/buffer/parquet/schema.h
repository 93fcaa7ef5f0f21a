// The Parquet schema as a tree (from the footer's flattened, depth-first SchemaElement list): per
// node its repetition and max definition / repetition levels; per leaf (column chunk) how its
// physical values map to JSON (ValueKind). Type mapping (docs/buffer.md): strings/enums/JSON ->
// strings, ints -> numbers, DECIMAL -> exact numbers, DATE -> "YYYY-MM-DD", TIME/TIMESTAMP/INT96 ->
// ISO-8601 strings, FLOAT16 -> numbers, UUID -> canonical text, other binary -> string if UTF-8 else
// base64. Annotations this reader cannot map (INTERVAL, ...) throw UnsupportedError naming the column.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "buffer/parquet/metadata.h"

namespace trinity::buffer::parquet {

enum class ValueKind {
  kNull,
  kBool,
  kInt32,
  kUInt32,
  kInt64,
  kUInt64,
  kFloat,
  kDouble,
  kFloat16,
  kString,
  kBinary,
  kDecimal,
  kDate,
  kTime,
  kTimestamp,
  kInt96,
  kUuid,
};

struct SchemaNode {
  const SchemaElement* elem = nullptr;
  Repetition repetition = Repetition::kRequired;
  int16_t def_level = 0, rep_level = 0;  // max levels counting this node
  std::vector<int> children;             // node indices
  int leaf = -1;                         // column index for leaves
  std::string path;                      // dotted path from the root
  bool is_leaf() const { return elem->type >= 0 && elem->num_children == 0; }
};

struct LeafInfo {
  int node = 0;
  Type physical = Type::kInt32;
  int32_t type_length = 0;
  ValueKind kind = ValueKind::kInt32;
  int32_t scale = 0;  // decimal
  int digits = 3;     // time / timestamp: 3 ms, 6 us, 9 ns
  bool utc = false;   // timestamp
  int16_t max_def = 0, max_rep = 0;
  std::string path;
};

class Schema {
 public:
  Schema(const std::vector<SchemaElement>& elems, const std::string& ctx);

  const SchemaNode& node(int i) const { return nodes_[static_cast<size_t>(i)]; }
  const std::vector<int>& top() const { return nodes_[0].children; }  // top-level columns
  const std::vector<LeafInfo>& leaves() const { return leaves_; }
  // A readable type: "string", "int64", "list<struct<role: string, content: string>>", ...
  std::string type_text(int node) const;
  bool is_list(int node) const;
  bool is_map(int node) const;

 private:
  int build(const std::vector<SchemaElement>& elems, size_t& next, int parent, int depth);
  LeafInfo classify(int node) const;

  std::vector<SchemaNode> nodes_;
  std::vector<LeafInfo> leaves_;
  std::string ctx_;
};

}  // namespace trinity::buffer::parquet
