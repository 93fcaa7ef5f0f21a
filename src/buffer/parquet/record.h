// Record assembly (Dremel): definition and repetition levels of the leaf columns -> one JSON object
// text per row. A plan (Field tree) is compiled from the schema once: structs -> objects, LIST
// (3-level standard, legacy 2-level and bare repeated fields) -> arrays, MAP -> objects keyed by the
// key's text. A node that is null at its level consumes one level entry from each of its leaves.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>
#include <vector>

#include "buffer/parquet/column_reader.h"
#include "buffer/parquet/schema.h"

namespace trinity::buffer::parquet {

struct Field {
  enum class Kind { kLeaf, kStruct, kList, kMap };
  Kind kind = Kind::kLeaf;
  std::string key;  // JSON text of the member name with ':' ("\"name\":")
  int16_t def = 0;  // definition level at which the value is non-null
  bool nullable = false;
  int16_t list_rep = 0;         // list / map: repetition level of the repeated node
  int16_t list_def = 0;         // list / map: definition level meaning "at least one element"
  int leaf = -1;                // kLeaf: column index
  std::vector<Field> children;  // struct members; list: [element]; map: [key, value]
  std::vector<int> leaves;      // every column index under this field, in order
};

// The plan of top-level column `node`.
Field make_field_plan(const Schema& schema, int node);

// Assembles rows from decoded columns (indexed by column index; only those under `fields` are read).
class RowAssembler {
 public:
  RowAssembler(const std::vector<Field>& fields, const std::vector<LeafInfo>& leaves,
               const std::vector<const ColumnData*>& columns, std::string ctx);
  // Appends one row's JSON object to out; non_null[i] = top-level field i is not null.
  void next_row(std::string& out, uint8_t* non_null);
  // Throws if a column holds levels beyond the rows read.
  void finish() const;

 private:
  struct Cursor {
    const int16_t* def = nullptr;
    const int16_t* rep = nullptr;
    size_t pos = 0, n = 0, val = 0;
    int16_t max_def = 0;
    const Values* values = nullptr;
    const LeafInfo* info = nullptr;
  };
  int16_t def_at(const Cursor& c) const { return c.def ? c.def[c.pos] : c.max_def; }
  int16_t rep_at(const Cursor& c) const { return c.rep ? c.rep[c.pos] : 0; }
  Cursor& first(const Field& f);
  void emit(const Field& f, std::string& out);
  void skip_entry(const Field& f);
  void write_value(Cursor& c, std::string& out);
  [[noreturn]] void corrupt(const Cursor& c, const std::string& msg) const;

  const std::vector<Field>& fields_;
  std::vector<Cursor> cur_;
  std::string ctx_, scratch_;
};

}  // namespace trinity::buffer::parquet
