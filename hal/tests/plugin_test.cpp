// Plugin drivers: the null driver .so found by path and through TESSERA_DRIVER_PATH
// (directories and files), broken paths and non-drivers as unavailable records, an ABI 1.0
// plugin (smaller struct_size) that still loads, the null driver's UNIMPLEMENTED answers,
// and the C ABI compiled as C99. Plugin paths come from the build (compile definitions).
#include "hal/tests/hal_test_util.h"

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <gtest/gtest.h>
#include <string>

extern "C" int tsr_c_api_smoke(const char *plugin_path, char *error, size_t error_size);

namespace tessera::hal {
namespace {

namespace fs = std::filesystem;

class Plugins : public ::testing::Test {
protected:
  void SetUp() override {
    TSR_ASSERT_OK(tsr_registry_create(&registry_));
    dir_ = fs::temp_directory_path() /
           ("tessera_plugins_" + std::to_string(::getpid()) + "_" +
            ::testing::UnitTest::GetInstance()->current_test_info()->name());
    fs::create_directories(dir_);
  }
  void TearDown() override {
    tsr_registry_release(registry_);
    std::error_code ignored;
    fs::remove_all(dir_, ignored);
  }

  std::vector<std::string> deviceNames() {
    uint32_t count = 0;
    TSR_EXPECT_OK(tsr_registry_device_count(registry_, &count));
    std::vector<std::string> names;
    for (uint32_t i = 0; i < count; ++i) {
      tsr_device_info_t info = {};
      info.struct_size = sizeof(info);
      TSR_EXPECT_OK(tsr_registry_device_info(registry_, i, &info));
      names.push_back(info.name);
    }
    return names;
  }

  std::vector<std::string> unavailable() {
    uint32_t count = 0;
    TSR_EXPECT_OK(tsr_registry_unavailable_count(registry_, &count));
    std::vector<std::string> records;
    for (uint32_t i = 0; i < count; ++i) {
      tsr_unavailable_t record = {};
      TSR_EXPECT_OK(tsr_registry_unavailable(registry_, i, &record));
      records.push_back(std::string(record.backend) + ": " + record.reason);
    }
    return records;
  }

  tsr_registry_t registry_ = nullptr;
  fs::path dir_;
};

TEST_F(Plugins, NullDriverLoadsByPathAndAnswersUnimplemented) {
  TSR_ASSERT_OK(tsr_registry_load_plugins(registry_, TSR_NULL_PLUGIN_PATH));
  ASSERT_EQ(deviceNames(), std::vector<std::string>{"null:0"});
  EXPECT_TRUE(unavailable().empty());
  tsr_device_t device = nullptr;
  TSR_ASSERT_OK(tsr_registry_open_device(registry_, "null:0", &device));
  tsr_buffer_t buffer = nullptr;
  TSR_EXPECT_ERROR(tsr_buffer_allocate(device, 64, TSR_MEMORY_DEVICE_LOCAL, &buffer),
                   TSR_UNIMPLEMENTED,
                   "tsr_buffer_allocate: null driver: buffer_allocate not implemented");
  tsr_stream_t stream = nullptr;
  TSR_EXPECT_ERROR(tsr_stream_create(device, &stream), TSR_UNIMPLEMENTED,
                   "null driver: stream_create not implemented");
  tsr_event_t event = nullptr;
  TSR_EXPECT_ERROR(tsr_event_create(device, &event), TSR_UNIMPLEMENTED,
                   "null driver: event_create not implemented");
  tsr_executable_t exe = nullptr;
  TSR_EXPECT_ERROR(tsr_executable_create(device, "anything", "x", 1, &exe), TSR_UNIMPLEMENTED,
                   "null driver: executable_create not implemented");
  tsr_device_release(device);
}

TEST_F(Plugins, SearchPathFromTheEnvironment) {
  fs::copy_file(TSR_NULL_PLUGIN_PATH, dir_ / "libtessera_null_driver.so");
  std::ofstream(dir_ / "libgarbage.so") << "this is not an ELF file";
  std::string path = "/nonexistent/libtessera_cuda_driver.so:" + dir_.string() + "::libm.so.6";
  ASSERT_EQ(setenv("TESSERA_DRIVER_PATH", path.c_str(), 1), 0);
  tsr_status_t status = tsr_registry_load_plugins(registry_, nullptr);
  unsetenv("TESSERA_DRIVER_PATH");
  TSR_ASSERT_OK(status);
  EXPECT_EQ(deviceNames(), std::vector<std::string>{"null:0"});
  std::vector<std::string> records = unavailable();
  ASSERT_EQ(records.size(), 3u);
  EXPECT_EQ(records[0].rfind("/nonexistent/libtessera_cuda_driver.so: dlopen failed: ", 0), 0u)
      << records[0];
  EXPECT_NE(records[1].find("libgarbage.so: dlopen failed:"), std::string::npos) << records[1];
  EXPECT_EQ(
      records[2],
      "libm.so.6: not a Tessera plugin: it exports neither tsr_plugin_entry nor tsr_driver_entry");
}

TEST_F(Plugins, UnsetSearchPathLoadsNothing) {
  unsetenv("TESSERA_DRIVER_PATH");
  TSR_ASSERT_OK(tsr_registry_load_plugins(registry_, nullptr));
  EXPECT_TRUE(deviceNames().empty());
  EXPECT_TRUE(unavailable().empty());
}

TEST_F(Plugins, ADuplicateBackendIsUnavailableNotFatal) {
  std::string twice = std::string(TSR_NULL_PLUGIN_PATH) + ":" + TSR_NULL_PLUGIN_PATH;
  TSR_ASSERT_OK(tsr_registry_load_plugins(registry_, twice.c_str()));
  EXPECT_EQ(deviceNames(), std::vector<std::string>{"null:0"});
  std::vector<std::string> records = unavailable();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0].rfind("null: backend 'null' is already registered (by ", 0), 0u)
      << records[0];
}

TEST_F(Plugins, AnOlderMinorVersionStillLoads) {
  TSR_ASSERT_OK(tsr_registry_load_plugins(registry_, TSR_OLD_MINOR_PLUGIN_PATH));
  ASSERT_EQ(deviceNames(), std::vector<std::string>{"oldminor:0"});
  tsr_device_t device = nullptr;
  TSR_ASSERT_OK(tsr_registry_open_device(registry_, "oldminor:0", &device));
  tsr_stream_t stream = nullptr;
  TSR_ASSERT_OK(tsr_stream_create(device, &stream));
  TSR_EXPECT_OK(tsr_stream_synchronize(stream));
  bool idle = true;
  TSR_EXPECT_ERROR(tsr_stream_query(stream, &idle), TSR_UNIMPLEMENTED,
                   "tsr_stream_query: driver 'oldminor' (ABI 1.0) does not implement "
                   "stream_query");
  EXPECT_FALSE(idle) << "out parameters are zeroed on entry";
  TSR_EXPECT_ERROR(tsr_stream_set_timeout(stream, 1000000), TSR_UNIMPLEMENTED,
                   "tsr_stream_set_timeout: driver 'oldminor' (ABI 1.0) does not implement "
                   "stream_set_timeout");
  tsr_buffer_t buffer = nullptr;
  TSR_EXPECT_ERROR(tsr_buffer_allocate(device, 16, TSR_MEMORY_DEVICE_LOCAL, &buffer),
                   TSR_RESOURCE_EXHAUSTED, "exceeds the total memory 0 of device 'oldminor:0'");
  tsr_stream_release(stream);
  tsr_device_release(device);
}

TEST(CApi, CompilesAsC99AndWorks) {
  char error[512] = "";
  EXPECT_EQ(tsr_c_api_smoke(TSR_NULL_PLUGIN_PATH, error, sizeof(error)), 1) << error;
}

} // namespace
} // namespace tessera::hal
