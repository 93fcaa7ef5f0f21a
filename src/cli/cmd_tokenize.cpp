// trinity tokenize: JSONL in, JSONL out, one output line per input line.
//   {"text": s}                      -> {"ids": [...], "decoded": decode(ids)}
//   {"messages": [...], "tools"?, "add_generation_prompt"?, "enable_thinking"?}
//                                    -> {"rendered": s, "ids": [...]} (+ "assistant_mask" with --mask)
// Errors name the input line. Uses DIR/tokenizer.json and DIR/tokenizer_config.json.
#include <memory>
#include <nlohmann/json.hpp>
#include <sstream>

#include "cli/args.h"
#include "cli/commands.h"
#include "core/error.h"
#include "core/file.h"
#include "core/json_limits.h"
#include "hub/model.h"
#include "tokenizer/chat.h"
#include "tokenizer/tokenizer.h"

namespace trinity::cli {

int cmd_tokenize(const Argv& argv) {
  const Args args("tokenize", argv, {"tokenizer", "input", "output", "template", "mask!"});
  const std::string dir = hub::resolve_model_dir(args.str("tokenizer"), "--tokenizer", false),
                    in_path = args.str("input"), out_path = args.str("output");
  const std::string template_name = args.str("template", "default");
  const bool with_mask = args.flag("mask");
  const tok::Tokenizer tokenizer = tok::Tokenizer::load(dir);
  std::unique_ptr<tok::ChatFormatter> chat;  // loaded on the first chat line

  using ojson = nlohmann::ordered_json;
  std::istringstream in(file::read_all(in_path));
  std::string line, out;
  size_t lineno = 0;
  while (std::getline(in, line)) {
    ++lineno;
    const std::string where = strcat(in_path, ":", lineno);
    ojson row;
    check_json_depth(line, where, kMaxJsonDepth, "tokenize");
    try {
      row = ojson::parse(line);
    } catch (const ojson::exception& e) {
      throw ValueError("tokenize", strcat(where, ": invalid JSON: ", e.what()));
    }
    if (!row.is_object()) throw ValueError("tokenize", strcat(where, ": expected a JSON object"));
    ojson res;
    try {
      if (row.contains("text")) {
        if (!row["text"].is_string()) throw ValueError("tokenize", strcat(where, ": \"text\" must be a string"));
        const auto ids = tokenizer.encode(row["text"].get<std::string>());
        res["ids"] = ids;
        res["decoded"] = tokenizer.decode(ids);
      } else if (row.contains("messages")) {
        if (!chat) chat = std::make_unique<tok::ChatFormatter>(tokenizer, tok::TokenizerConfig::load(dir), template_name);
        tok::ChatOptions opt;
        if (row.contains("add_generation_prompt")) {
          if (!row["add_generation_prompt"].is_boolean())
            throw ValueError("tokenize", strcat(where, ": \"add_generation_prompt\" must be a boolean"));
          opt.add_generation_prompt = row["add_generation_prompt"].get<bool>();
        }
        if (row.contains("enable_thinking") && !row["enable_thinking"].is_null()) {
          if (!row["enable_thinking"].is_boolean())
            throw ValueError("tokenize", strcat(where, ": \"enable_thinking\" must be a boolean"));
          opt.enable_thinking = row["enable_thinking"].get<bool>();
        }
        if (row.contains("tools") && !row["tools"].is_null()) {
          if (!row["tools"].is_array()) throw ValueError("tokenize", strcat(where, ": \"tools\" must be a list"));
          opt.tools = tok::jinja::Value::from_json(row["tools"].dump());
        }
        if (!row["messages"].is_array()) throw ValueError("tokenize", strcat(where, ": \"messages\" must be a list"));
        const auto enc = chat->encode(tok::jinja::Value::from_json(row["messages"].dump()), opt, with_mask);
        res["rendered"] = enc.rendered;
        res["ids"] = enc.ids;
        if (with_mask) res["assistant_mask"] = enc.assistant_mask;
      } else {
        throw ValueError("tokenize", strcat(where, ": expected a \"text\" or a \"messages\" key"));
      }
    } catch (const Error& e) {
      if (e.component() == "tokenize") throw;
      throw ValueError("tokenize", strcat(where, ": ", e.what()));
    }
    out += res.dump(-1, ' ', false, ojson::error_handler_t::replace);
    out += '\n';
  }
  file::write_atomic(out_path, out);
  return 0;
}

}  // namespace trinity::cli
