// Record assembly and leaf value formatting (see record.h).
#include "buffer/parquet/record.h"

#include <cstring>

#include "buffer/parquet/bytes.h"
#include "buffer/parquet/json_text.h"
#include "core/error.h"

namespace trinity::buffer::parquet {

namespace {

std::string key_text(const std::string& name) {
  std::string k;
  write_json_string(k, name.data(), name.size());
  k += ':';
  return k;
}

void collect_leaves(Field& f) {
  if (f.kind == Field::Kind::kLeaf) {
    f.leaves = {f.leaf};
    return;
  }
  f.leaves.clear();
  for (auto& c : f.children) {
    collect_leaves(c);
    f.leaves.insert(f.leaves.end(), c.leaves.begin(), c.leaves.end());
  }
}

Field make_value(const Schema& s, int id, bool as_element);

// A node as it appears inside its parent: repeated nodes become lists of their values.
Field make_member(const Schema& s, int id) {
  const SchemaNode& n = s.node(id);
  if (n.repetition != Repetition::kRepeated) return make_value(s, id, false);
  Field f;
  f.kind = Field::Kind::kList;
  f.def = static_cast<int16_t>(n.def_level - 1);
  f.list_rep = n.rep_level;
  f.list_def = n.def_level;
  f.children.push_back(make_value(s, id, true));
  return f;
}

Field struct_of(const Schema& s, int id, const std::vector<int>& kids) {
  Field f;
  f.kind = Field::Kind::kStruct;
  for (int c : kids) {
    Field m = make_member(s, c);
    m.key = key_text(s.node(c).elem->name);
    f.children.push_back(std::move(m));
  }
  (void)id;
  return f;
}

// The value of node `id`; as_element: the node is a repeated node seen as one element (never null).
Field make_value(const Schema& s, int id, bool as_element) {
  const SchemaNode& n = s.node(id);
  Field f;
  if (n.is_leaf()) {
    f.kind = Field::Kind::kLeaf;
    f.leaf = n.leaf;
  } else if ((s.is_list(id) || s.is_map(id)) && n.children.size() == 1 &&
             s.node(n.children[0]).repetition == Repetition::kRepeated && !as_element) {
    const int rep = n.children[0];
    const SchemaNode& r = s.node(rep);
    f.list_rep = r.rep_level;
    f.list_def = r.def_level;
    if (s.is_map(id) && !r.is_leaf() && (r.children.size() == 2 || r.children.size() == 1)) {
      f.kind = Field::Kind::kMap;
      for (int c : r.children) f.children.push_back(make_member(s, c));
    } else {
      f.kind = Field::Kind::kList;
      if (r.is_leaf() || r.children.size() != 1 || r.elem->name == "array" || r.elem->name == n.elem->name + "_tuple")
        f.children.push_back(make_value(s, rep, true));  // legacy 2-level: the repeated node is the element
      else
        f.children.push_back(make_member(s, r.children[0]));  // standard 3-level
    }
  } else {
    f = struct_of(s, id, n.children);
  }
  f.def = n.def_level;
  f.nullable = !as_element && n.repetition == Repetition::kOptional;
  return f;
}

float half_to_float(uint16_t h) {
  const uint32_t sign = uint32_t{h & 0x8000u} << 16, exp = (h >> 10) & 0x1f, mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0) {
    if (mant == 0) {
      bits = sign;
    } else {  // subnormal: renormalize
      int e = -1;
      uint32_t m = mant;
      do {
        ++e;
        m <<= 1;
      } while (!(m & 0x400u));
      bits = sign | static_cast<uint32_t>(127 - 15 - e) << 23 | (m & 0x3ffu) << 13;
    }
  } else if (exp == 31) {
    bits = sign | 0x7f800000u | mant << 13;
  } else {
    bits = sign | (exp + 127 - 15) << 23 | mant << 13;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

}  // namespace

Field make_field_plan(const Schema& schema, int node) {
  Field f = make_member(schema, node);
  f.key = key_text(schema.node(node).elem->name);
  collect_leaves(f);
  return f;
}

RowAssembler::RowAssembler(const std::vector<Field>& fields, const std::vector<LeafInfo>& leaves,
                           const std::vector<const ColumnData*>& columns, std::string ctx)
    : fields_(fields), cur_(leaves.size()), ctx_(std::move(ctx)) {
  for (const auto& f : fields) {
    for (int l : f.leaves) {
      Cursor& c = cur_[static_cast<size_t>(l)];
      const ColumnData& d = *columns[static_cast<size_t>(l)];
      c.def = d.def.empty() ? nullptr : d.def.data();
      c.rep = d.rep.empty() ? nullptr : d.rep.data();
      c.n = d.n_levels;
      c.max_def = leaves[static_cast<size_t>(l)].max_def;
      c.values = &d.values;
      c.info = &leaves[static_cast<size_t>(l)];
    }
  }
}

void RowAssembler::corrupt(const Cursor& c, const std::string& msg) const {
  throw IoError("parquet", strcat(ctx_, ": column '", c.info->path, "': ", msg));
}

RowAssembler::Cursor& RowAssembler::first(const Field& f) {
  Cursor& c = cur_[static_cast<size_t>(f.leaves.front())];
  if (c.pos >= c.n) corrupt(c, "levels end before the row group's rows do");
  return c;
}

void RowAssembler::skip_entry(const Field& f) {
  for (int l : f.leaves) {
    Cursor& c = cur_[static_cast<size_t>(l)];
    if (c.pos >= c.n) corrupt(c, "levels end before the row group's rows do");
    if (def_at(c) == c.max_def) ++c.val;
    ++c.pos;
  }
}

void RowAssembler::next_row(std::string& out, uint8_t* non_null) {
  out += '{';
  for (size_t i = 0; i < fields_.size(); ++i) {
    const Field& f = fields_[i];
    const Cursor& c = first(f);
    if (rep_at(c) != 0) corrupt(c, strcat("row starts with repetition level ", rep_at(c)));
    if (non_null) non_null[i] = !f.nullable || def_at(c) >= f.def;
    if (i) out += ',';
    out += f.key;
    emit(f, out);
  }
  out += '}';
}

void RowAssembler::emit(const Field& f, std::string& out) {
  Cursor& c0 = first(f);
  const int16_t d = def_at(c0);
  if (f.nullable && d < f.def) {
    out += "null";
    skip_entry(f);
    return;
  }
  switch (f.kind) {
    case Field::Kind::kLeaf: {
      if (d == c0.max_def)
        write_value(c0, out);
      else
        out += "null";
      ++c0.pos;
      return;
    }
    case Field::Kind::kStruct: {
      out += '{';
      for (size_t i = 0; i < f.children.size(); ++i) {
        if (i) out += ',';
        out += f.children[i].key;
        emit(f.children[i], out);
      }
      out += '}';
      return;
    }
    case Field::Kind::kList:
    case Field::Kind::kMap: {
      const bool is_map = f.kind == Field::Kind::kMap;
      if (d < f.list_def) {
        out += is_map ? "{}" : "[]";
        skip_entry(f);
        return;
      }
      out += is_map ? '{' : '[';
      for (bool more = true, any = false; more; any = true) {
        if (any) out += ',';
        if (is_map) {
          const size_t at = out.size();
          emit(f.children[0], out);
          if (out[at] != '"') {  // non-string keys become their JSON text as a string
            scratch_.assign(out, at, std::string::npos);
            out.resize(at);
            write_json_string(out, scratch_.data(), scratch_.size());
          }
          out += ':';
          if (f.children.size() > 1)
            emit(f.children[1], out);
          else
            out += "null";
        } else {
          emit(f.children[0], out);
        }
        const Cursor& c = cur_[static_cast<size_t>(f.leaves.front())];
        more = c.pos < c.n && rep_at(c) == f.list_rep;
      }
      out += is_map ? '}' : ']';
      return;
    }
  }
}

void RowAssembler::write_value(Cursor& c, std::string& out) {
  const Values& v = *c.values;
  if (c.val >= v.size) corrupt(c, strcat("has fewer values (", v.size, ") than its levels say"));
  const size_t i = c.val++;
  const LeafInfo& li = *c.info;
  const uint8_t* fx = v.fixed.data() + i * v.width;
  const uint8_t* bp = nullptr;
  size_t bn = 0;
  if (v.is_bytes()) {
    bp = reinterpret_cast<const uint8_t*>(v.bytes.data()) + v.offsets[i];
    bn = v.offsets[i + 1] - v.offsets[i];
  } else if (li.physical == Type::kFixedLenByteArray) {
    bp = fx;
    bn = v.width;
  }
  switch (li.kind) {
    case ValueKind::kNull:
      out += "null";
      return;
    case ValueKind::kBool:
      out += fx[0] ? "true" : "false";
      return;
    case ValueKind::kInt32:
      write_int(out, static_cast<int32_t>(le32(fx)));
      return;
    case ValueKind::kUInt32:
      write_uint(out, le32(fx));
      return;
    case ValueKind::kInt64:
      write_int(out, static_cast<int64_t>(le64(fx)));
      return;
    case ValueKind::kUInt64:
      write_uint(out, le64(fx));
      return;
    case ValueKind::kFloat: {
      float f;
      std::memcpy(&f, fx, 4);
      write_float(out, f);
      return;
    }
    case ValueKind::kDouble: {
      double d;
      std::memcpy(&d, fx, 8);
      write_double(out, d);
      return;
    }
    case ValueKind::kFloat16:
      write_float(out, half_to_float(static_cast<uint16_t>(fx[0] | fx[1] << 8)));
      return;
    case ValueKind::kString:
      write_json_string(out, reinterpret_cast<const char*>(bp), bn);
      return;
    case ValueKind::kBinary:
      if (is_valid_utf8(reinterpret_cast<const char*>(bp), bn))
        write_json_string(out, reinterpret_cast<const char*>(bp), bn);
      else
        write_base64_string(out, bp, bn);
      return;
    case ValueKind::kDecimal:
      if (li.physical == Type::kInt32)
        write_decimal(out, static_cast<int32_t>(le32(fx)), li.scale);
      else if (li.physical == Type::kInt64)
        write_decimal(out, static_cast<int64_t>(le64(fx)), li.scale);
      else
        write_decimal_be(out, bp, bn, li.scale);
      return;
    case ValueKind::kDate:
      write_date(out, static_cast<int32_t>(le32(fx)));
      return;
    case ValueKind::kTime:
      write_time(out, li.physical == Type::kInt32 ? static_cast<int32_t>(le32(fx)) : static_cast<int64_t>(le64(fx)),
                 li.digits);
      return;
    case ValueKind::kTimestamp:
      write_timestamp(out, static_cast<int64_t>(le64(fx)), li.digits, li.utc);
      return;
    case ValueKind::kInt96: {
      // 8 bytes nanoseconds of the day, then 4 bytes Julian day number.
      const int64_t nanos = static_cast<int64_t>(le64(fx)), julian = static_cast<int32_t>(le32(fx + 8));
      const int64_t days = julian - 2440588;
      if (days > 106751 || days < -106751)
        corrupt(c, strcat("INT96 timestamp with Julian day ", julian, " is out of range"));
      write_timestamp(out, days * 86400000000000LL + nanos, 9, false);
      return;
    }
    case ValueKind::kUuid: {
      static const char kHex[] = "0123456789abcdef";
      char buf[38];
      size_t k = 0;
      buf[k++] = '"';
      for (size_t b = 0; b < 16; ++b) {
        if (b == 4 || b == 6 || b == 8 || b == 10) buf[k++] = '-';
        buf[k++] = kHex[bp[b] >> 4];
        buf[k++] = kHex[bp[b] & 15];
      }
      buf[k++] = '"';
      out.append(buf, k);
      return;
    }
  }
}

void RowAssembler::finish() const {
  for (const auto& f : fields_)
    for (int l : f.leaves) {
      const Cursor& c = cur_[static_cast<size_t>(l)];
      if (c.pos != c.n) corrupt(c, strcat("holds ", c.n - c.pos, " level(s) beyond the row group's rows"));
    }
}

}  // namespace trinity::buffer::parquet
