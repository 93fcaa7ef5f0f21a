// Schema tree and leaf type classification (see schema.h).
#include "buffer/parquet/schema.h"

#include "core/error.h"

namespace trinity::buffer::parquet {

Schema::Schema(const std::vector<SchemaElement>& elems, const std::string& ctx) : ctx_(ctx) {
  if (elems.empty()) throw IoError("parquet", strcat(ctx, ": footer has an empty schema"));
  nodes_.reserve(elems.size());
  size_t next = 0;
  build(elems, next, -1, 0);
  if (next != elems.size())
    throw IoError("parquet",
                  strcat(ctx, ": schema has ", elems.size() - next, " element(s) outside the root's children"));
  for (size_t i = 0; i < nodes_.size(); ++i) {
    if (nodes_[i].leaf >= 0) {
      LeafInfo li = classify(static_cast<int>(i));
      leaves_.push_back(std::move(li));
    }
  }
}

int Schema::build(const std::vector<SchemaElement>& elems, size_t& next, int parent, int depth) {
  if (next >= elems.size()) throw IoError("parquet", strcat(ctx_, ": schema element counts run past the schema list"));
  if (depth > 100) throw IoError("parquet", strcat(ctx_, ": schema nested deeper than 100 levels"));
  const SchemaElement& e = elems[next++];
  const int id = static_cast<int>(nodes_.size());
  nodes_.emplace_back();
  {
    SchemaNode& n = nodes_.back();
    n.elem = &e;
    n.repetition = parent < 0 ? Repetition::kRequired : static_cast<Repetition>(e.repetition);
    if (parent >= 0 && (e.repetition < 0 || e.repetition > 2))
      throw IoError("parquet", strcat(ctx_, ": column '", e.name, "' has repetition type ", e.repetition));
    const SchemaNode* p = parent >= 0 ? &nodes_[static_cast<size_t>(parent)] : nullptr;
    n.def_level = static_cast<int16_t>((p ? p->def_level : 0) + (n.repetition != Repetition::kRequired ? 1 : 0));
    n.rep_level = static_cast<int16_t>((p ? p->rep_level : 0) + (n.repetition == Repetition::kRepeated ? 1 : 0));
    n.path = p && !p->path.empty() ? p->path + "." + e.name : (parent >= 0 ? e.name : "");
  }
  if (e.num_children < 0 || static_cast<size_t>(e.num_children) > elems.size())
    throw IoError("parquet", strcat(ctx_, ": column '", e.name, "' claims ", e.num_children, " children"));
  if (e.num_children == 0) {
    if (parent < 0) return id;  // an empty root: no columns
    if (e.type < 0 || e.type > 7)
      throw IoError("parquet", strcat(ctx_, ": column '", nodes_[static_cast<size_t>(id)].path,
                                      "' is a leaf without a physical type"));
    int leaf_count = 0;
    for (const auto& nd : nodes_) leaf_count += nd.leaf >= 0;
    nodes_[static_cast<size_t>(id)].leaf = leaf_count;
    return id;
  }
  for (int c = 0; c < e.num_children; ++c) {
    const int child = build(elems, next, id, depth + 1);
    nodes_[static_cast<size_t>(id)].children.push_back(child);
  }
  return id;
}

bool Schema::is_list(int i) const {
  const SchemaElement& e = *node(i).elem;
  return !node(i).is_leaf() && (e.logical.kind == Logical::kList || e.converted == Converted::kList);
}

bool Schema::is_map(int i) const {
  const SchemaElement& e = *node(i).elem;
  return !node(i).is_leaf() &&
         (e.logical.kind == Logical::kMap || e.converted == Converted::kMap || e.converted == Converted::kMapKeyValue);
}

LeafInfo Schema::classify(int i) const {
  const SchemaNode& n = node(i);
  const SchemaElement& e = *n.elem;
  LeafInfo li;
  li.node = i;
  li.physical = static_cast<Type>(e.type);
  li.type_length = e.type_length;
  li.max_def = n.def_level;
  li.max_rep = n.rep_level;
  li.path = n.path;
  const Type t = li.physical;
  const bool binary = t == Type::kByteArray || t == Type::kFixedLenByteArray;
  auto bad = [&](const char* what) -> LeafInfo {
    throw UnsupportedError(
        "parquet", strcat(ctx_, ": column '", n.path, "': ", what, " on ", type_name(e.type), " is not supported"));
  };
  if (t == Type::kFixedLenByteArray && e.type_length <= 0)
    throw IoError("parquet",
                  strcat(ctx_, ": column '", n.path, "' is FIXED_LEN_BYTE_ARRAY with length ", e.type_length));
  const Logical lk = e.logical.kind;
  const Converted ct = e.converted;
  if (lk == Logical::kString || lk == Logical::kEnum || lk == Logical::kJson || ct == Converted::kUtf8 ||
      ct == Converted::kEnum || ct == Converted::kJson) {
    if (!binary) return bad("a string annotation");
    li.kind = ValueKind::kString;
  } else if (lk == Logical::kDecimal || ct == Converted::kDecimal) {
    if (t != Type::kInt32 && t != Type::kInt64 && !binary) return bad("DECIMAL");
    li.kind = ValueKind::kDecimal;
    li.scale = lk == Logical::kDecimal ? e.logical.scale : e.scale;
  } else if (lk == Logical::kDate || ct == Converted::kDate) {
    if (t != Type::kInt32) return bad("DATE");
    li.kind = ValueKind::kDate;
  } else if (lk == Logical::kTime || ct == Converted::kTimeMillis || ct == Converted::kTimeMicros) {
    const TimeUnit u = lk == Logical::kTime           ? e.logical.unit
                       : ct == Converted::kTimeMillis ? TimeUnit::kMillis
                                                      : TimeUnit::kMicros;
    if ((u == TimeUnit::kMillis) != (t == Type::kInt32) || (t != Type::kInt32 && t != Type::kInt64)) return bad("TIME");
    li.kind = ValueKind::kTime;
    li.digits = u == TimeUnit::kMillis ? 3 : u == TimeUnit::kMicros ? 6 : 9;
  } else if (lk == Logical::kTimestamp || ct == Converted::kTimestampMillis || ct == Converted::kTimestampMicros) {
    if (t != Type::kInt64) return bad("TIMESTAMP");
    const TimeUnit u = lk == Logical::kTimestamp           ? e.logical.unit
                       : ct == Converted::kTimestampMillis ? TimeUnit::kMillis
                                                           : TimeUnit::kMicros;
    li.kind = ValueKind::kTimestamp;
    li.digits = u == TimeUnit::kMillis ? 3 : u == TimeUnit::kMicros ? 6 : 9;
    li.utc = lk == Logical::kTimestamp ? e.logical.utc : true;  // legacy converted timestamps are UTC-adjusted
  } else if (lk == Logical::kInteger || (ct >= Converted::kUint8 && ct <= Converted::kInt64)) {
    bool is_signed = lk == Logical::kInteger ? e.logical.is_signed : ct >= Converted::kInt8;
    if (t == Type::kInt32)
      li.kind = is_signed ? ValueKind::kInt32 : ValueKind::kUInt32;
    else if (t == Type::kInt64)
      li.kind = is_signed ? ValueKind::kInt64 : ValueKind::kUInt64;
    else
      return bad("an INTEGER annotation");
  } else if (lk == Logical::kUuid) {
    if (t != Type::kFixedLenByteArray || e.type_length != 16) return bad("UUID");
    li.kind = ValueKind::kUuid;
  } else if (lk == Logical::kFloat16) {
    if (t != Type::kFixedLenByteArray || e.type_length != 2) return bad("FLOAT16");
    li.kind = ValueKind::kFloat16;
  } else if (lk == Logical::kUnknown) {
    li.kind = ValueKind::kNull;
  } else if (ct == Converted::kInterval) {
    return bad("INTERVAL");
  } else if (lk == Logical::kOther) {
    return bad("a logical type this reader does not know (VARIANT / GEOMETRY / ...)");
  } else {
    switch (t) {
      case Type::kBoolean:
        li.kind = ValueKind::kBool;
        break;
      case Type::kInt32:
        li.kind = ValueKind::kInt32;
        break;
      case Type::kInt64:
        li.kind = ValueKind::kInt64;
        break;
      case Type::kInt96:
        li.kind = ValueKind::kInt96;
        li.digits = 9;
        break;
      case Type::kFloat:
        li.kind = ValueKind::kFloat;
        break;
      case Type::kDouble:
        li.kind = ValueKind::kDouble;
        break;
      default:
        li.kind = ValueKind::kBinary;  // BYTE_ARRAY / FIXED_LEN_BYTE_ARRAY without annotation, BSON
    }
  }
  return li;
}

std::string Schema::type_text(int i) const {
  const SchemaNode& n = node(i);
  std::string inner;
  if (n.is_leaf()) {
    const LeafInfo& li = leaves_[static_cast<size_t>(n.leaf)];
    switch (li.kind) {
      case ValueKind::kNull:
        inner = "null";
        break;
      case ValueKind::kBool:
        inner = "bool";
        break;
      case ValueKind::kInt32:
        inner = "int32";
        break;
      case ValueKind::kUInt32:
        inner = "uint32";
        break;
      case ValueKind::kInt64:
        inner = "int64";
        break;
      case ValueKind::kUInt64:
        inner = "uint64";
        break;
      case ValueKind::kFloat:
        inner = "float";
        break;
      case ValueKind::kDouble:
        inner = "double";
        break;
      case ValueKind::kFloat16:
        inner = "float16";
        break;
      case ValueKind::kString:
        inner = "string";
        break;
      case ValueKind::kBinary:
        inner = "binary";
        break;
      case ValueKind::kDecimal:
        inner = strcat("decimal(",
                       n.elem->logical.kind == Logical::kDecimal ? n.elem->logical.precision : n.elem->precision, ",",
                       li.scale, ")");
        break;
      case ValueKind::kDate:
        inner = "date";
        break;
      case ValueKind::kTime:
        inner = "time";
        break;
      case ValueKind::kTimestamp:
        inner = li.utc ? "timestamp[utc]" : "timestamp";
        break;
      case ValueKind::kInt96:
        inner = "timestamp(int96)";
        break;
      case ValueKind::kUuid:
        inner = "uuid";
        break;
    }
  } else if ((is_list(i) || is_map(i)) && n.children.size() == 1 &&
             node(n.children[0]).repetition == Repetition::kRepeated) {
    const int rep = n.children[0];
    const SchemaNode& r = node(rep);
    if (is_map(i) && r.children.size() == 2) {
      inner = strcat("map<", type_text(r.children[0]), ", ", type_text(r.children[1]), ">");
    } else if (r.is_leaf() || r.children.size() != 1 || r.elem->name == "array" ||
               r.elem->name == n.elem->name + "_tuple") {
      std::string elem;
      if (r.is_leaf()) {
        elem = type_text(rep);
        if (elem.rfind("list<", 0) == 0) elem = elem.substr(5, elem.size() - 6);
      } else {
        elem = "struct<";
        for (size_t c = 0; c < r.children.size(); ++c)
          elem += strcat(c ? ", " : "", node(r.children[c]).elem->name, ": ", type_text(r.children[c]));
        elem += ">";
      }
      inner = "list<" + elem + ">";
    } else {
      inner = "list<" + type_text(r.children[0]) + ">";
    }
  } else {
    inner = "struct<";
    for (size_t c = 0; c < n.children.size(); ++c)
      inner += strcat(c ? ", " : "", node(n.children[c]).elem->name, ": ", type_text(n.children[c]));
    inner += ">";
  }
  if (n.repetition == Repetition::kRepeated) return "list<" + inner + ">";
  return inner;
}

}  // namespace trinity::buffer::parquet
