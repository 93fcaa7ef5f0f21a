// Footer and page-header decoding (see metadata.h); field ids follow parquet-format's parquet.thrift.
#include "buffer/parquet/metadata.h"

#include "buffer/parquet/thrift.h"
#include "core/error.h"

namespace trinity::buffer::parquet {

namespace {

// Calls fn(id, type) for each field of the struct at the reader's position.
template <typename Fn>
void for_fields(ThriftReader& r, Fn&& fn) {
  r.struct_begin();
  int16_t id;
  TType t;
  while (r.next_field(id, t)) fn(id, t);
  r.struct_end();
}

template <typename Fn>
void for_list(ThriftReader& r, TType field_type, Fn&& fn) {
  if (field_type != TType::kList) r.fail("expected a list");
  TType elem;
  const int64_t n = r.list_begin(elem);
  for (int64_t i = 0; i < n; ++i) fn(elem);
}

void expect(ThriftReader& r, TType got, TType want) {
  if (got != want) r.fail(strcat("field has wire type ", static_cast<int>(got), ", expected ", static_cast<int>(want)));
}

int32_t get_i32(ThriftReader& r, TType t) {
  expect(r, t, TType::kI32);
  return r.i32();
}
int64_t get_i64(ThriftReader& r, TType t) {
  expect(r, t, TType::kI64);
  return r.i64();
}

TimeUnit parse_time_unit(ThriftReader& r) {
  TimeUnit u = TimeUnit::kMillis;
  for_fields(r, [&](int16_t id, TType t) {
    if (id >= 1 && id <= 3) u = static_cast<TimeUnit>(id);
    r.skip(t);
  });
  return u;
}

LogicalType parse_logical(ThriftReader& r) {
  LogicalType lt;
  for_fields(r, [&](int16_t id, TType t) {
    if (t != TType::kStruct) {
      r.skip(t);
      return;
    }
    switch (id) {
      case 5:
        lt.kind = Logical::kDecimal;
        for_fields(r, [&](int16_t f, TType ft) {
          if (f == 1)
            lt.scale = get_i32(r, ft);
          else if (f == 2)
            lt.precision = get_i32(r, ft);
          else
            r.skip(ft);
        });
        return;
      case 7:
      case 8:
        lt.kind = id == 7 ? Logical::kTime : Logical::kTimestamp;
        for_fields(r, [&](int16_t f, TType ft) {
          if (f == 1)
            lt.utc = r.boolean(ft);
          else if (f == 2 && ft == TType::kStruct)
            lt.unit = parse_time_unit(r);
          else
            r.skip(ft);
        });
        return;
      case 10:
        lt.kind = Logical::kInteger;
        for_fields(r, [&](int16_t f, TType ft) {
          if (f == 1) {
            expect(r, ft, TType::kByte);
            lt.bit_width = static_cast<int8_t>(r.byte());
          } else if (f == 2)
            lt.is_signed = r.boolean(ft);
          else
            r.skip(ft);
        });
        return;
      case 1:
      case 2:
      case 3:
      case 4:
      case 6:
      case 11:
      case 12:
      case 13:
      case 14:
      case 15:
        lt.kind = static_cast<Logical>(id);
        r.skip(t);
        return;
      default:
        lt.kind = Logical::kOther;
        r.skip(t);
    }
  });
  return lt;
}

SchemaElement parse_schema_element(ThriftReader& r) {
  SchemaElement e;
  for_fields(r, [&](int16_t id, TType t) {
    switch (id) {
      case 1:
        e.type = get_i32(r, t);
        break;
      case 2:
        e.type_length = get_i32(r, t);
        break;
      case 3:
        e.repetition = get_i32(r, t);
        break;
      case 4:
        expect(r, t, TType::kBinary);
        e.name = r.binary();
        break;
      case 5:
        e.num_children = get_i32(r, t);
        break;
      case 6:
        e.converted = static_cast<Converted>(get_i32(r, t));
        break;
      case 7:
        e.scale = get_i32(r, t);
        break;
      case 8:
        e.precision = get_i32(r, t);
        break;
      case 10:
        expect(r, t, TType::kStruct);
        e.logical = parse_logical(r);
        break;
      default:
        r.skip(t);
    }
  });
  return e;
}

ColumnMetaData parse_column_meta(ThriftReader& r) {
  ColumnMetaData m;
  for_fields(r, [&](int16_t id, TType t) {
    switch (id) {
      case 1:
        m.type = get_i32(r, t);
        break;
      case 3:
        for_list(r, t, [&](TType et) {
          expect(r, et, TType::kBinary);
          m.path.push_back(r.binary());
        });
        break;
      case 4:
        m.codec = get_i32(r, t);
        break;
      case 5:
        m.num_values = get_i64(r, t);
        break;
      case 6:
        m.total_uncompressed_size = get_i64(r, t);
        break;
      case 7:
        m.total_compressed_size = get_i64(r, t);
        break;
      case 9:
        m.data_page_offset = get_i64(r, t);
        break;
      case 11:
        m.dictionary_page_offset = get_i64(r, t);
        break;
      default:
        r.skip(t);
    }
  });
  return m;
}

ColumnChunk parse_column_chunk(ThriftReader& r) {
  ColumnChunk c;
  for_fields(r, [&](int16_t id, TType t) {
    if (id == 1) {
      expect(r, t, TType::kBinary);
      c.file_path = r.binary();
    } else if (id == 3) {
      expect(r, t, TType::kStruct);
      c.meta = parse_column_meta(r);
      c.has_meta = true;
    } else
      r.skip(t);
  });
  return c;
}

RowGroup parse_row_group(ThriftReader& r) {
  RowGroup g;
  for_fields(r, [&](int16_t id, TType t) {
    if (id == 1)
      for_list(r, t, [&](TType et) {
        expect(r, et, TType::kStruct);
        g.columns.push_back(parse_column_chunk(r));
      });
    else if (id == 3)
      g.num_rows = get_i64(r, t);
    else
      r.skip(t);
  });
  return g;
}

}  // namespace

FileMetaData parse_file_metadata(const uint8_t* data, size_t size, const std::string& ctx) {
  ThriftReader r(data, size, ctx + ": footer");
  FileMetaData fm;
  for_fields(r, [&](int16_t id, TType t) {
    switch (id) {
      case 2:
        for_list(r, t, [&](TType et) {
          expect(r, et, TType::kStruct);
          fm.schema.push_back(parse_schema_element(r));
        });
        break;
      case 3:
        fm.num_rows = get_i64(r, t);
        break;
      case 4:
        for_list(r, t, [&](TType et) {
          expect(r, et, TType::kStruct);
          fm.row_groups.push_back(parse_row_group(r));
        });
        break;
      case 6:
        expect(r, t, TType::kBinary);
        fm.created_by = r.binary();
        break;
      default:
        r.skip(t);
    }
  });
  return fm;
}

PageHeader parse_page_header(const uint8_t* data, size_t size, const std::string& ctx, size_t& header_size) {
  ThriftReader r(data, size, ctx + ": page header");
  PageHeader h;
  for_fields(r, [&](int16_t id, TType t) {
    switch (id) {
      case 1:
        h.type = static_cast<PageType>(get_i32(r, t));
        break;
      case 2:
        h.uncompressed_size = get_i32(r, t);
        break;
      case 3:
        h.compressed_size = get_i32(r, t);
        break;
      case 5:  // DataPageHeader
        expect(r, t, TType::kStruct);
        for_fields(r, [&](int16_t f, TType ft) {
          if (f == 1)
            h.num_values = get_i32(r, ft);
          else if (f == 2)
            h.encoding = static_cast<Encoding>(get_i32(r, ft));
          else if (f == 3)
            h.def_encoding = static_cast<Encoding>(get_i32(r, ft));
          else if (f == 4)
            h.rep_encoding = static_cast<Encoding>(get_i32(r, ft));
          else
            r.skip(ft);
        });
        break;
      case 7:  // DictionaryPageHeader
        expect(r, t, TType::kStruct);
        for_fields(r, [&](int16_t f, TType ft) {
          if (f == 1)
            h.num_values = get_i32(r, ft);
          else if (f == 2)
            h.encoding = static_cast<Encoding>(get_i32(r, ft));
          else
            r.skip(ft);
        });
        break;
      case 8:  // DataPageHeaderV2
        expect(r, t, TType::kStruct);
        for_fields(r, [&](int16_t f, TType ft) {
          switch (f) {
            case 1:
              h.num_values = get_i32(r, ft);
              break;
            case 2:
              h.num_nulls = get_i32(r, ft);
              break;
            case 3:
              h.num_rows = get_i32(r, ft);
              break;
            case 4:
              h.encoding = static_cast<Encoding>(get_i32(r, ft));
              break;
            case 5:
              h.def_bytes = get_i32(r, ft);
              break;
            case 6:
              h.rep_bytes = get_i32(r, ft);
              break;
            case 7:
              h.v2_compressed = r.boolean(ft);
              break;
            default:
              r.skip(ft);
          }
        });
        break;
      default:
        r.skip(t);
    }
  });
  header_size = r.pos();
  return h;
}

const char* type_name(int32_t type) {
  static const char* const kNames[] = {"BOOLEAN", "INT32",  "INT64",      "INT96",
                                       "FLOAT",   "DOUBLE", "BYTE_ARRAY", "FIXED_LEN_BYTE_ARRAY"};
  return type >= 0 && type < 8 ? kNames[type] : "unknown type";
}

const char* codec_name(int32_t codec) {
  static const char* const kNames[] = {"UNCOMPRESSED", "SNAPPY", "GZIP", "LZO", "BROTLI", "LZ4", "ZSTD", "LZ4_RAW"};
  return codec >= 0 && codec < 8 ? kNames[codec] : "unknown codec";
}

const char* encoding_name(int32_t encoding) {
  static const char* const kNames[] = {
      "PLAIN",          "GROUP_VAR_INT",       "PLAIN_DICTIONARY",        "RLE",
      "BIT_PACKED",     "DELTA_BINARY_PACKED", "DELTA_LENGTH_BYTE_ARRAY", "DELTA_BYTE_ARRAY",
      "RLE_DICTIONARY", "BYTE_STREAM_SPLIT"};
  return encoding >= 0 && encoding < 10 ? kNames[encoding] : "unknown encoding";
}

}  // namespace trinity::buffer::parquet
