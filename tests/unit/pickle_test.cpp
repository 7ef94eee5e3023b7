// The restricted pickle machine on hand-written opcode strings: what it builds, and every way it refuses.
#include "precdetect/load/pickle/pickle.h"

#include <gtest/gtest.h>

#include "precdetect/core/error.h"
#include "precdetect/load/torch/torch_tensors.h"
#include "test_util.h"

namespace precdetect {
namespace {

using namespace std::string_literals;
using testing::unicode;

pickle::Result run(const std::string& bytes) {
  return pickle::run({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()}, "data.pkl", 1000);
}

/// Expects Error(kInvalidPickle) at absolute offset `offset` (the pickle starts at 1000) mentioning `detail`.
void expect_invalid(const std::string& bytes, const std::string& detail, uint64_t offset = 1010) {
  try {
    run(bytes);
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidPickle) << e.what();
    std::string where = "data.pkl: invalid pickle at offset " + std::to_string(offset) + ": ";
    EXPECT_NE(std::string(e.what()).find(where), std::string::npos) << e.what();
    EXPECT_NE(std::string(e.what()).find(detail), std::string::npos) << e.what();
  }
}

// {'w': _rebuild_tensor_v2(<storage '0' FloatStorage x6>, 0, (2, 3), (3, 1), False, {})}, as torch writes it.
const std::string kStateDict = "\x80\x02}("s + unicode("w") + "ctorch._utils\n_rebuild_tensor_v2\n((" +
                               unicode("storage") + "ctorch\nFloatStorage\n" + unicode("0") + unicode("cpu") +
                               "K\x06tQK\x00K\x02K\x03\x86K\x03K\x01\x86\x89}tRu."s;

TEST(Pickle, RebuildsTensorViewsFromAStateDict) {
  auto result = run(kStateDict);
  const auto& dict = std::get<pickle::Dict>(result.root->v);
  ASSERT_EQ(dict.items.size(), 1u);
  const auto& tensor = std::get<pickle::Tensor>(dict.items[0].second->v);
  EXPECT_EQ(tensor.storage.key, "0");
  EXPECT_EQ(tensor.storage.numel, 6u);
  EXPECT_EQ(tensor.dtype, DType::F32);
  EXPECT_EQ(tensor.size, (std::vector<int64_t>{2, 3}));
  EXPECT_EQ(tensor.stride, (std::vector<int64_t>{3, 1}));
  EXPECT_TRUE(result.not_called.empty());
  EXPECT_EQ(result.end, 1000 + kStateDict.size());
  auto found = find_tensors(result, "data.pkl");
  ASSERT_EQ(found.size(), 1u);
  EXPECT_EQ(found[0].name, "w");
}

TEST(Pickle, GlobalsOffTheAllowlistAreRecordedNeverCalled) {
  auto result =
      run("\x80\x02"
          "cos\nsystem\n"s +
          unicode("touch /tmp/x") + "\x85R.");
  EXPECT_EQ(result.not_called, std::set<std::string>{"os.system"});
  EXPECT_EQ(std::get<pickle::Opaque>(result.root->v).type.qualified(), "os.system");
  auto object =
      run("\x80\x02"
          "cmodels.yolo\nModel\n)\x81}" +
          unicode("w") + "K\x01sb."s);
  EXPECT_EQ(object.not_called, std::set<std::string>{"models.yolo.Model"});
  EXPECT_TRUE(std::get<pickle::Opaque>(object.root->v).state);  // BUILD kept the state
}

TEST(Pickle, ItemsSetOnAForeignObjectAreKept) {
  // defaultdict(int, w=1): REDUCE builds the object, SETITEMS fills it afterwards
  auto result =
      run("\x80\x02"
          "ccollections\ndefaultdict\n"
          "cbuiltins\nint\n\x85R(" +
          unicode("w") + "K\x01u."s);
  const auto& object = std::get<pickle::Opaque>(result.root->v);
  ASSERT_TRUE(object.contents);
  EXPECT_EQ(std::get<pickle::Dict>(object.contents->v).items.size(), 1u);
  EXPECT_EQ(result.not_called, std::set<std::string>{"collections.defaultdict"});
}

TEST(Pickle, MemoAndSharedReferences) {
  auto result =
      run("\x80\x02]q\x00"
          "h\x00"
          "a."s);  // a list that contains itself
  const auto& list = std::get<pickle::List>(result.root->v);
  ASSERT_EQ(list.items.size(), 1u);
  EXPECT_EQ(list.items[0].get(), result.root.get());
  EXPECT_TRUE(find_tensors(result, "data.pkl").empty());  // the cycle is walked once
}

/// _rebuild_tensor_v2 of FloatStorage `key` (6 values) viewed as (2, 3), pushed by the opcodes this returns.
std::string rebuilt_tensor(const std::string& key) {
  return "ctorch._utils\n_rebuild_tensor_v2\n((" + unicode("storage") + "ctorch\nFloatStorage\n" + unicode(key) +
         unicode("cpu") + "K\x06tQK\x00K\x02K\x03\x86K\x03K\x01\x86\x89}tR"s;
}

std::vector<std::string> names(const std::vector<FoundTensor>& found) {
  std::vector<std::string> out;
  for (const FoundTensor& item : found) out.push_back(item.name);
  return out;
}

// Issue 20: every way a checkpoint builds its mappings gives the same named tensors.
TEST(Pickle, MappingsBuiltFromPairs) {
  std::string pair_a = unicode("a") + rebuilt_tensor("0"), pair_b = unicode("b") + rebuilt_tensor("1");
  std::string ordered_dict = "ccollections\nOrderedDict\n";
  const std::map<std::string, std::string> forms = {
      // OrderedDict([[k, v], ...]): Python 2-era legacy state dicts (lists built with MARK ... LIST)
      {"list of lists", ordered_dict + "((" + pair_a + "l(" + pair_b + "ll\x85R"},
      {"list of tuples", ordered_dict + "(" + pair_a + "\x86" + pair_b + "\x86l\x85R"},
      {"tuple of lists", ordered_dict + "((" + pair_a + "l(" + pair_b + "lt\x85R"},
      {"dict(pairs)", "cbuiltins\ndict\n(" + pair_a + "\x86" + pair_b + "\x86l\x85R"},
      {"OrderedDict() + SETITEMS", ordered_dict + ")R(" + pair_a + pair_b + "u"},
      {"OrderedDict({..})", ordered_dict + "}(" + pair_a + pair_b + "u\x85R"},
  };
  for (const auto& [form, body] : forms) {
    SCOPED_TRACE(form);
    // then BUILD of the state dict's _metadata, as torch writes it
    auto result = run("\x80\x02" + body + "}" + unicode("_metadata") + "Nsb."s);
    EXPECT_EQ(names(find_tensors(result, "data.pkl")), (std::vector<std::string>{"a", "b"})) << form;
    EXPECT_TRUE(result.not_called.empty()) << form;
  }
}

TEST(Pickle, AModulesDictsSayParameterOrBuffer) {
  // Net() with __dict__ {_parameters: {w}, _buffers: {running_var}, grid: [t], _modules: {}}
  auto result =
      run("\x80\x02"
          "cnet\nNet\n)\x81}(" +
          unicode("_parameters") + "}" + unicode("w") + rebuilt_tensor("0") + "s" + unicode("_buffers") + "}" +
          unicode("running_var") + rebuilt_tensor("1") + "s" + unicode("grid") + "]" + rebuilt_tensor("2") + "a" +
          unicode("_modules") + "}ub."s);
  auto found = find_tensors(result, "data.pkl");
  ASSERT_EQ(names(found), (std::vector<std::string>{"w", "running_var", "grid.0"}));
  EXPECT_EQ(found[0].role, TensorRole::kModel);
  EXPECT_EQ(found[1].role, TensorRole::kBuffer);
  EXPECT_EQ(found[2].role, TensorRole::kBuffer);
  for (const FoundTensor& item : found) EXPECT_TRUE(item.role_from_file) << item.name;
}

// How the walker names what it finds: the path of keys, indexes and attributes, as a state_dict would.
TEST(Pickle, TensorsAreNamedByTheirPath) {
  // {'state_dict': {'enc': {'layers': [t0, t1]}, 3: t2}, 'optimizer': {'m': t3}, 'epoch': 7}
  auto result =
      run("\x80\x02}(" + unicode("state_dict") + "}(" + unicode("enc") + "}" + unicode("layers") + "](" +
          rebuilt_tensor("0") + rebuilt_tensor("1") + "es" + "K\x03" + rebuilt_tensor("2") + "u" +
          unicode("optimizer") + "}" + unicode("m") + rebuilt_tensor("3") + "s" + unicode("epoch") + "K\x07u."s);
  auto found = find_tensors(result, "data.pkl");
  EXPECT_EQ(names(found), (std::vector<std::string>{"enc.layers.0", "enc.layers.1", "3", "optimizer.m"}));
  EXPECT_EQ(found[3].role, TensorRole::kOptimizer);
  EXPECT_EQ(names(find_tensors(run("\x80\x02" + rebuilt_tensor("0") + "."), "data.pkl")),
            std::vector<std::string>{"(root)"});
}

TEST(Pickle, TensorsNoPathReachesAreStillFound) {
  // {'w': t0, 'held': Holder(t1)}: Holder is never called, so no key path leads into its arguments
  auto result = run("\x80\x02}(" + unicode("w") + rebuilt_tensor("0") + unicode("held") + "cmain\nHolder\n" +
                    rebuilt_tensor("1") + "\x85Ru."s);
  auto found = find_tensors(result, "data.pkl");
  ASSERT_EQ(names(found), (std::vector<std::string>{"w", "(unreached).1"}));
  EXPECT_FALSE(found[1].reached);
  EXPECT_EQ(found[1].tensor->storage.key, "1");
}

// Each hostile input fails at offset 1000 + 10 (unless said otherwise): ten bytes of padding ops come first.
const std::string kPad = "\x80\x02NNNN0000";  // PROTO, four Nones pushed and popped: offset 10 is next

TEST(Pickle, RefusesWhatItCannotRead) {
  expect_invalid(kPad + "\xff.", "unknown or unsupported opcode 0xff");
  expect_invalid(kPad + "0.", "stack underflow");
  expect_invalid(kPad + "h\x07.", "memo entry 7 was never stored");
  expect_invalid(kPad +
                     "X\xff\xff\xff\xff"
                     "abc",
                 "truncated");                                 // huge length: nothing allocated
  expect_invalid(kPad + "\x8b\xff\xff\xff\x7f", "truncated");  // LONG4 of 2 GB
  expect_invalid(kPad + "N", "truncated", 1011);               // no STOP
  expect_invalid(kPad + "(.", "stack underflow", 1011);        // STOP above a MARK with nothing there
  expect_invalid(kPad + "1.", "no MARK");
  expect_invalid(kPad + std::string(5000, '(') + ".", "MARK nesting limit", 1010 + 4096);
  expect_invalid(kPad + "N}a.", "wrong type", 1012);  // APPEND to a dict
}

TEST(Pickle, AContainerSharedByTwoPathsIsNamedOnEach) {
  // d = {'w': t}; {'a': d, 'b': d}: a module tied in two places, which a state_dict names twice
  auto result = run("\x80\x02}(" + unicode("a") + "}q\x00"s + unicode("w") + rebuilt_tensor("0") + "s" + unicode("b") +
                    "h\x00u."s);
  auto found = find_tensors(result, "data.pkl");
  ASSERT_EQ(names(found), (std::vector<std::string>{"a.w", "b.w"}));
  EXPECT_EQ(found[0].tensor, found[1].tensor);
}

TEST(Pickle, AContainerWithoutTensorsIsWalkedOnce) {
  // {'w': t, 'k0': xs, ..., 'k63': xs} with xs a list of 4000 ints: a pickled model's layers sharing one config's
  // list. Walked on each path, it took 256K steps, over the 137K this pickle's size allows.
  std::string shared = "](";
  for (int i = 0; i < 4000; ++i) shared += "K\x07";
  shared += "eq\x01"s;
  std::string bytes = "\x80\x02}(" + unicode("w") + rebuilt_tensor("0") + unicode("k0") + shared;
  for (int i = 1; i < 64; ++i) bytes += unicode("k" + std::to_string(i)) + "h\x01";
  auto result = run(bytes + "u.");
  EXPECT_EQ(names(find_tensors(result, "data.pkl")), std::vector<std::string>{"w"});
}

TEST(Pickle, AContainerOnACycleIsWalkedOnEachPath) {
  // a = [b, t]; b = [a]; {'x': a, 'y': b}: b holds no tensor itself, but t lies below it through the cycle
  auto result = run("\x80\x02}(" + unicode("x") + "]q\x00(]q\x01h\x00"s + "a" + rebuilt_tensor("0") + "e" +
                    unicode("y") + "h\x01u."s);
  EXPECT_EQ(names(find_tensors(result, "data.pkl")), (std::vector<std::string>{"x.1", "y.0.1"}));
}

/// Expects the tensor walker to refuse the graph `bytes` build with Error(kInvalidPickle) mentioning `detail`.
void expect_walk_refused(const std::string& bytes, const std::string& detail) {
  auto result = run(bytes);
  try {
    find_tensors(result, "data.pkl");
    FAIL() << "accepted";
  } catch (const Error& e) {
    EXPECT_EQ(e.code(), ErrorCode::kInvalidPickle) << e.what();
    EXPECT_NE(std::string(e.what()).find(detail), std::string::npos) << e.what();
  }
}

TEST(Pickle, ReferencesToReferencesAreAnErrorNotAHang) {
  // x = t, then x = (x, x, x) forty times (DUP, DUP, TUPLE3): 3^40 paths to name t by; fuzz_pickle_machine found
  // the graph over None, which is walked once now that it holds no tensor
  std::string bytes;
  for (int i = 0; i < 40; ++i) bytes += "22\x87";
  expect_walk_refused("\x80\x02" + rebuilt_tensor("0") + bytes + ".", "objects through shared references");
  auto result = run("\x80\x02N" + bytes + ".");
  EXPECT_TRUE(find_tensors(result, "data.pkl").empty());
}

TEST(Pickle, DeepNestingIsAnErrorNotAStackOverflow) {
  std::string bytes = "\x80\x02";
  for (int i = 0; i < 400; ++i) bytes += "]";
  for (int i = 0; i < 399; ++i) bytes += "a";
  expect_walk_refused(bytes + ".", "nests too deeply");
}

/// Runs `bytes` with a log, as the safety examination does.
pickle::PickleLog logged(const std::string& bytes, pickle::Result* result = nullptr) {
  pickle::PickleLog log;
  pickle::Result ran =
      pickle::run({reinterpret_cast<const std::byte*>(bytes.data()), bytes.size()}, "data.pkl", 0, nullptr, &log);
  if (result) *result = ran;
  return log;
}

const pickle::Import& import_named(const pickle::PickleLog& log, const std::string& qualified) {
  for (const auto& item : log.imports)
    if (item.module + "." + item.name == qualified) return item;
  throw std::runtime_error("no import " + qualified);
}

TEST(Pickle, AMethodReferenceOfAGlobalIsLoggedAsTheMethod) {
  // getattr(Segment, 'forward'), as pickle writes a method of a class
  pickle::Result result;
  auto log = logged(
      "\x80\x02"
      "cbuiltins\ngetattr\ncmodels.head\nSegment\n"s +
          unicode("forward") + "\x86R.",
      &result);
  ASSERT_EQ(log.imports.size(), 3u);
  EXPECT_TRUE(import_named(log, "builtins.getattr").references_methods);
  EXPECT_FALSE(import_named(log, "builtins.getattr").called);
  const pickle::Import& method = import_named(log, "models.head.Segment.forward");
  EXPECT_EQ(method.attribute, "forward");
  EXPECT_EQ(method.spelling, "builtins.getattr(models.head.Segment, 'forward')");
  EXPECT_EQ(method.offset, 54u);  // the REDUCE
  EXPECT_EQ(std::get<pickle::Global>(result.root->v).qualified(), "models.head.Segment.forward");
  EXPECT_TRUE(result.not_called.empty());
}

TEST(Pickle, AMethodBoundToAnInstanceIsItsClasssMethodAndACallOfItIsSeen) {
  // m = Conv.__new__(Conv); getattr(m, 'forward_fuse')(x): a module's `forward = forward_fuse`, then called
  auto log = logged(
      "\x80\x02"
      "cmodels.conv\nConv\n)\x81q\x00"
      "0cbuiltins\ngetattr\nh\x00"s +
      unicode("forward_fuse") + "\x86R" + unicode("x") + "\x85R.");
  const pickle::Import& method = import_named(log, "models.conv.Conv.forward_fuse");
  EXPECT_EQ(method.spelling, "builtins.getattr(<models.conv.Conv object>, 'forward_fuse')");
  EXPECT_TRUE(method.called);
  EXPECT_FALSE(import_named(log, "builtins.getattr").called);
}

TEST(Pickle, GetattrOfAnythingElseIsACallOfGetattr) {
  const std::string getattr =
      "\x80\x02"
      "cbuiltins\ngetattr\n";
  std::map<std::string, std::string> cases = {
      {"a dunder name", getattr + "cmodels\nNet\n" + unicode("__globals__") + "\x86R."},
      {"a computed name", getattr + "cmodels\nNet\ncmodels\nname\n)R\x86R."},
      {"an attribute chain", getattr + "cmodels\nNet\n" + unicode("a.b") + "\x86R."},
      {"what a call returned",
       getattr + "cbuiltins\n__import__\n" + unicode("os") + "\x85R" + unicode("system") + "\x86R."},
      {"three arguments", getattr + "cmodels\nNet\n" + unicode("x") + "N\x87R."},
      // a method reference, and getattr itself held in a list: handed to code the machine does not follow
      {"getattr held as data", getattr + "q\x00"s + "cmodels\nNet\n" + unicode("x") + "\x86R0](h\x00"s + "e."},
  };
  for (const auto& [what, bytes] : cases) {
    auto log = logged(bytes);
    EXPECT_TRUE(import_named(log, "builtins.getattr").called) << what;
  }
}

TEST(Pickle, StopAndPopReadAsCPythonReadsThem) {
  // MARK POP, then a value padded with DUP POP: CPython's unpicklers read both as no-ops
  auto result =
      run("\x80\x02(0K\x05"
          "20."s);
  EXPECT_EQ(std::get<int64_t>(result.root->v), 5);
  // STOP returns the top of the stack: what lies below it, or an open MARK, is left
  EXPECT_EQ(std::get<int64_t>(run("\x80\x02K\x01K\x02."s).root->v), 2);
  EXPECT_EQ(std::get<int64_t>(run("\x80\x02(K\x03."s).root->v), 3);
  expect_invalid(
      "\x80\x02"
      "0K\x01."s,
      "stack underflow", 1002);  // a POP on an empty stack still fails
}

}  // namespace
}  // namespace precdetect
