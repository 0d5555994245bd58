// Tuning records: durable appends, resumption after a torn write, and clear refusals.
#include <gtest/gtest.h>
#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <sstream>

#include "test_support.h"
#include "tune/records.h"

namespace dietcode::tune {
namespace {

namespace fs = std::filesystem;

class RecordsTest : public ::testing::Test {
 protected:
  void SetUp() override {
    dir_ = fs::temp_directory_path() / ("dietcode-records-" + std::to_string(::getpid()) + "-" +
                                        ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::remove_all(dir_);
    fs::create_directories(dir_);
    path_ = (dir_ / "r.jsonl").string();
    machine_ = this_machine();
  }
  void TearDown() override { fs::remove_all(dir_); }

  RecordFile::Options options() const { return {path_, {{"op", "test"}}, machine_}; }
  static TuningRecord record(int i) {
    TuningRecord r;
    r.schedule = testing::make_schedule(schedule::Isa::Avx2, 1 + i % 4, 16, 64, 4 * (1 + i % 4), 32);
    r.shape = {i + 1};
    r.origin = tune::Origin::Joint;
    r.seconds = 1e-3 * (i + 1);
    r.gflops = 10.0 + i;
    r.compile_seconds = 0.01;
    return r;
  }
  std::string read() const {
    std::ifstream f(path_);
    std::stringstream s;
    s << f.rdbuf();
    return s.str();
  }
  void write(const std::string& text) const { std::ofstream(path_, std::ios::trunc) << text; }

  fs::path dir_;
  std::string path_;
  MachineInfo machine_;
};

TEST_F(RecordsTest, AppendsAreThereAfterReopening) {
  {
    RecordFile f = RecordFile::open(options());
    EXPECT_TRUE(f.records().empty());
    for (int i = 0; i < 5; ++i) f.append(record(i));
    TuningRecord bad = record(5);
    bad.error = "wrong result: relative error 0.5";
    bad.seconds = bad.gflops = 0;
    bad.max_rel_err = std::nan("");  // stored as -1, beside the error text
    f.append(bad);
  }
  RecordFile f = RecordFile::open(options());
  ASSERT_EQ(f.records().size(), 6u);
  for (int i = 0; i < 5; ++i) {
    EXPECT_EQ(f.records()[i].schedule, record(i).schedule);
    EXPECT_EQ(f.records()[i].shape, record(i).shape);
    EXPECT_DOUBLE_EQ(f.records()[i].gflops, record(i).gflops);
    EXPECT_GT(f.records()[i].unix_time, 0);
  }
  EXPECT_FALSE(f.records()[5].ok());
  EXPECT_EQ(f.records()[5].max_rel_err, -1);
}

TEST_F(RecordsTest, ATornLastRecordIsDroppedAndAppendingGoesOn) {
  {
    RecordFile f = RecordFile::open(options());
    for (int i = 0; i < 3; ++i) f.append(record(i));
  }
  std::string text = read();
  size_t intact = text.size();
  write(text + R"({"schedule": {"target": "cpu", "isa": "av)");  // killed mid-write
  {
    RecordFile f = RecordFile::open(options());
    EXPECT_EQ(f.records().size(), 3u);
    ASSERT_EQ(f.warnings().size(), 1u);
    EXPECT_NE(f.warnings()[0].find("byte offset " + std::to_string(intact)), std::string::npos)
        << f.warnings()[0];
    f.append(record(3));
  }
  RecordFile f = RecordFile::open(options());
  EXPECT_EQ(f.records().size(), 4u);
  EXPECT_TRUE(f.warnings().empty());
}

TEST_F(RecordsTest, ACorruptRecordIsAnErrorNamingFileAndOffset) {
  {
    RecordFile f = RecordFile::open(options());
    for (int i = 0; i < 3; ++i) f.append(record(i));
  }
  std::string text = read();
  size_t second = text.find('\n', text.find('\n') + 1) + 1;  // start of the 2nd record
  std::string corrupt = text;
  corrupt[second] = '#';
  write(corrupt);
  EXPECT_USER_ERROR(RecordFile::open(options()), path_ + ": byte offset " + std::to_string(second));
  // A record whose JSON is fine but whose content is not.
  std::string bad_field = text.substr(0, second) + R"({"schedule": {"mr": 1}})" + "\n";
  write(bad_field);
  EXPECT_USER_ERROR(RecordFile::open(options()), "byte offset " + std::to_string(second));
  // Nothing was lost: the file is left as it was for the user to inspect.
  EXPECT_EQ(read(), bad_field);
}

TEST_F(RecordsTest, ForeignFilesAreRefused) {
  { RecordFile f = RecordFile::open(options()); }
  RecordFile::Options other = options();
  other.workload = {{"op", "another"}};
  EXPECT_USER_ERROR(RecordFile::open(other), "another workload");
  other = options();
  other.machine.cpu_model = "Some Other CPU";
  EXPECT_USER_ERROR(RecordFile::open(other), "this one is Some Other CPU");
  write("{\"format\": \"dietcode-records\", \"version\": 99}\n");
  EXPECT_USER_ERROR(RecordFile::open(options()), "version 99 is not supported");
  write("hello\n");
  EXPECT_USER_ERROR(RecordFile::open(options()), "byte offset 0");
  write("");
  EXPECT_USER_ERROR(RecordFile::open(options()), "empty records file");
  write("{\"format\": \"dietcode-rec");
  EXPECT_USER_ERROR(RecordFile::open(options()), "truncated");
}

TEST_F(RecordsTest, OtherMachinesRecordsCanWarmStart) {
  {
    RecordFile f = RecordFile::open(options());
    for (int i = 0; i < 4; ++i) f.append(record(i));
  }
  EXPECT_EQ(read_records_any_machine(path_).size(), 4u);
}

}  // namespace
}  // namespace dietcode::tune
