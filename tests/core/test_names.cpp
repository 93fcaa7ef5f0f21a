// core/names.h, core/json_fields.h, core/registry.h: one did-you-mean rule, typed key errors that carry
// their path as data, a thread-safe name -> factory registry.
#include <gtest/gtest.h>

#include <functional>
#include <string>
#include <thread>
#include <vector>

#include "core/json_fields.h"
#include "core/names.h"
#include "core/registry.h"

using namespace trinity;

TEST(Names, EditDistance) {
  EXPECT_EQ(edit_distance("", ""), 0u);
  EXPECT_EQ(edit_distance("abc", ""), 3u);
  EXPECT_EQ(edit_distance("kitten", "sitting"), 3u);
  EXPECT_EQ(edit_distance("save_intervall", "save_interval"), 1u);
}

TEST(Names, ClosestWithinAThirdOfTheKey) {
  const std::vector<std::string> keys = {"save_interval", "total_epochs", "grad_clip"};
  EXPECT_EQ(closest_name("save_intervl", keys), "save_interval");
  EXPECT_EQ(closest_name("grad_clp", keys), "grad_clip");
  EXPECT_EQ(closest_name("zzz", keys), "");            // nothing close
  EXPECT_EQ(closest_name("save_interval", keys), "");  // an exact match is not a suggestion
  EXPECT_EQ(did_you_mean_suffix("total_epoch", keys), " (did you mean 'total_epochs'?)");
  EXPECT_EQ(did_you_mean_suffix("qqqqqqqq", keys), "");
}

TEST(Names, JoinAndUnknownName) {
  EXPECT_EQ(join_names({}), "(none)");
  EXPECT_EQ(join_names({"b", "a"}), "b, a");
  EXPECT_EQ(sorted_unique({"b", "a", "b"}), (std::vector<std::string>{"a", "b"}));
  try {
    throw_unknown_name("workflow", "workflow", "math_workfow", {"simple_workflow", "math_workflow"});
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "[workflow] unknown workflow 'math_workfow' (did you mean 'math_workflow'?); registered: "
                 "math_workflow, simple_workflow");
  }
}

TEST(JsonFields, UnknownKeyCarriesPathAndValidKeys) {
  const auto j = nlohmann::json::parse(R"({"path": "a.jsonl", "pth": 1, "capacity": 3})");
  JsonFields f(j, "buffer.taskset", "config");
  std::string path;
  int64_t cap = 0;
  f.str("path", path);
  f.i64("capacity", cap);
  f.get("split");
  try {
    f.finish();
    FAIL() << "unknown key not reported";
  } catch (const UnknownKeyError& e) {
    EXPECT_EQ(e.path(), "buffer.taskset.pth");
    EXPECT_EQ(e.key(), "pth");
    EXPECT_EQ(e.valid(), (std::vector<std::string>{"path", "capacity", "split"}));
    EXPECT_STREQ(e.what(),
                 "[config] unknown key 'buffer.taskset.pth' (did you mean 'path'?); valid keys here: capacity, "
                 "path, split");
  }
  EXPECT_EQ(path, "a.jsonl");
  EXPECT_EQ(cap, 3);
}

TEST(JsonFields, CollectsUnknownWhenAsked) {
  const auto j = nlohmann::json::parse(R"({"a": 1, "b": 2, "c": 3})");
  std::vector<std::string> unknown;
  JsonFields f(j, "x", "config", &unknown);
  f.get("b");
  f.finish();
  EXPECT_EQ(unknown, (std::vector<std::string>{"x.a", "x.c"}));
}

TEST(JsonFields, WrongTypeIsAKeyErrorNamingThePath) {
  const auto j = nlohmann::json::parse(R"({"n": 1.5, "flag": "yes", "name": 3, "d": 2})");
  JsonFields f(j, "reward_fn_args", "reward");
  int64_t n = 0;
  bool flag = false;
  std::string name;
  double d = 0;
  f.f64("d", d);  // an integer is a number
  EXPECT_EQ(d, 2.0);
  try {
    f.i64("n", n);
    FAIL();
  } catch (const KeyError& e) {
    EXPECT_EQ(e.path(), "reward_fn_args.n");
    EXPECT_STREQ(e.what(), "[reward] reward_fn_args.n: expected an integer, got 1.5");
  }
  EXPECT_THROW(f.boolean("flag", flag), KeyError);
  EXPECT_THROW(f.str("name", name), KeyError);
  EXPECT_THROW(JsonFields(nlohmann::json::array(), "top"), KeyError);
}

TEST(NamedRegistry, AddGetReplaceAndUnknown) {
  NamedRegistry<std::function<int()>> r("reward", "reward_fn");
  r.add("math_reward", [] { return 1; });
  r.add(
      "math_reward", [] { return 2; }, /*replace=*/false);  // a built-in never replaces
  EXPECT_EQ(r.get("math_reward")(), 1);
  r.add("math_reward", [] { return 3; });
  EXPECT_EQ(r.get("math_reward")(), 3);
  EXPECT_TRUE(r.contains("math_reward"));
  EXPECT_FALSE(r.contains("x"));
  try {
    r.get("math_rewrad");
    FAIL();
  } catch (const ConfigError& e) {
    EXPECT_STREQ(e.what(),
                 "[reward] unknown reward_fn 'math_rewrad' (did you mean 'math_reward'?); registered: math_reward");
  }
}

TEST(NamedRegistry, ConcurrentAddAndGet) {
  NamedRegistry<std::function<int()>> r("t", "thing");
  std::vector<std::thread> ts;
  for (int t = 0; t < 4; ++t)
    ts.emplace_back([&r, t] {
      for (int i = 0; i < 200; ++i) {
        const std::string name = strcat("n", t * 1000 + i);
        r.add(name, [i] { return i; });
        EXPECT_EQ(r.get(name)(), i);
      }
    });
  for (auto& th : ts) th.join();
  EXPECT_EQ(r.names().size(), 800u);
}
