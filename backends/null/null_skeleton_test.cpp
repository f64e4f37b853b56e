// The porting skeleton never rots: every entry of the null driver past device_open answers
// UNIMPLEMENTED naming itself, the null target's compile and deviceOptions say what to
// implement, and the plugin .so brings both halves through tsr_plugin_entry (its target joins
// a TargetRegistry once, however many registries load it; a name clash is an error).
#include "backends/null/null_driver.h"
#include "backends/null/null_target.h"
#include "backends/plugin_targets.h"
#include "ir/text/parser.h"

#include <gtest/gtest.h>
#include <string>

namespace tessera {
namespace {

// "CODE: message" and frees the status ("" for OK).
std::string consume(tsr_status_t st) {
  if (!st)
    return "";
  std::string s =
      std::string(tsr_status_code_name(tsr_status_code(st))) + ": " + tsr_status_message(st);
  tsr_status_free(st);
  return s;
}

std::string unimplemented(const char *entry) {
  return std::string("UNIMPLEMENTED: null driver: ") + entry + " not implemented";
}

TEST(NullSkeleton, EveryDriverEntryPastDeviceOpenIsUnimplemented) {
  const tsr_driver_v1 *t = tsr_null_driver();
  ASSERT_EQ(t->struct_size, sizeof(tsr_driver_v1));
  EXPECT_EQ(std::string(t->name), "null");
  tsr_drv_driver_t drv = nullptr;
  ASSERT_EQ(consume(t->driver_open(&drv)), "");
  uint32_t n = 0;
  ASSERT_EQ(consume(t->device_count(drv, &n)), "");
  EXPECT_EQ(n, 1u);
  tsr_drv_device_t dev = nullptr;
  ASSERT_EQ(consume(t->device_open(drv, 0, &dev)), "");
  tsr_drv_buffer_t buf = nullptr;
  tsr_drv_stream_t stream = nullptr;
  tsr_drv_event_t event = nullptr;
  tsr_drv_executable_t exe = nullptr;
  tsr_drv_kernel_t kernel = nullptr;
  void *ptr = nullptr;
  bool idle = false;
  uint32_t count = 0, dims[3] = {1, 1, 1};
  char host[4] = {};
  tsr_kernel_info_t kinfo = {};
  EXPECT_EQ(consume(t->buffer_allocate(dev, 64, TSR_MEMORY_DEVICE_LOCAL, &buf)),
            unimplemented("buffer_allocate"));
  EXPECT_EQ(consume(t->buffer_map(dev, buf, &ptr)), unimplemented("buffer_map"));
  EXPECT_EQ(consume(t->stream_create(dev, &stream)), unimplemented("stream_create"));
  EXPECT_EQ(consume(t->stream_fill(dev, stream, buf, 0, 4, 0, 4)), unimplemented("stream_fill"));
  EXPECT_EQ(consume(t->stream_copy_h2d(dev, stream, host, buf, 0, 4)),
            unimplemented("stream_copy_h2d"));
  EXPECT_EQ(consume(t->stream_copy_d2h(dev, stream, buf, 0, host, 4)),
            unimplemented("stream_copy_d2h"));
  EXPECT_EQ(consume(t->stream_copy_d2d(dev, stream, buf, 0, buf, 0, 4)),
            unimplemented("stream_copy_d2d"));
  EXPECT_EQ(consume(t->stream_launch(dev, stream, kernel, dims, dims, nullptr, 0)),
            unimplemented("stream_launch"));
  EXPECT_EQ(consume(t->stream_record_event(dev, stream, event)),
            unimplemented("stream_record_event"));
  EXPECT_EQ(consume(t->stream_wait_event(dev, stream, event)), unimplemented("stream_wait_event"));
  EXPECT_EQ(consume(t->stream_synchronize(dev, stream)), unimplemented("stream_synchronize"));
  EXPECT_EQ(consume(t->stream_query(dev, stream, &idle)), unimplemented("stream_query"));
  EXPECT_EQ(consume(t->stream_set_timeout(dev, stream, 1)), unimplemented("stream_set_timeout"));
  EXPECT_EQ(consume(t->event_create(dev, &event)), unimplemented("event_create"));
  EXPECT_EQ(consume(t->event_synchronize(dev, event)), unimplemented("event_synchronize"));
  EXPECT_EQ(consume(t->event_query(dev, event, &idle)), unimplemented("event_query"));
  EXPECT_EQ(consume(t->executable_create(dev, "null-object", host, 4, &exe)),
            unimplemented("executable_create"));
  EXPECT_EQ(consume(t->executable_kernel_count(dev, exe, &count)),
            unimplemented("executable_kernel_count"));
  EXPECT_EQ(consume(t->executable_kernel(dev, exe, 0, &kinfo, &kernel)),
            unimplemented("executable_kernel"));
  t->device_close(dev);
  t->driver_close(drv);
}

TEST(NullSkeleton, TheTargetSaysWhatToImplement) {
  std::unique_ptr<Target> t = null::makeTarget();
  EXPECT_EQ(t->name(), "null");
  EXPECT_EQ(t->backend(), "null");
  tsr_device_info_t info = {};
  TargetOptions opts;
  std::string error;
  EXPECT_FALSE(t->deviceOptions(info, "", &opts, &error));
  EXPECT_EQ(error.rfind("null target: deviceOptions not implemented (", 0), 0u) << error;
  ir::ParseResult r = ir::parseModule("kernel @k(%n: i32) {\n}\n", "k.tir", /*verify=*/false);
  ASSERT_TRUE(r.ok());
  EXPECT_FALSE(t->compile(*r.module, opts, &error).has_value());
  EXPECT_EQ(error.rfind("null target: compile not implemented (", 0), 0u) << error;
  EXPECT_NE(error.find("'null-object'"), std::string::npos) << error;
}

class NullPlugin : public ::testing::Test {
protected:
  void SetUp() override {
    ASSERT_EQ(consume(tsr_registry_create(&registry_)), "");
    ASSERT_EQ(consume(tsr_registry_load_plugins(registry_, TSR_NULL_PLUGIN_PATH)), "");
  }
  void TearDown() override { tsr_registry_release(registry_); }
  tsr_registry_t registry_ = nullptr;
};

TEST_F(NullPlugin, BringsTheDriverAndTheTargetOnce) {
  uint32_t devices = 0;
  ASSERT_EQ(consume(tsr_registry_device_count(registry_, &devices)), "");
  EXPECT_EQ(devices, 1u);
  TargetRegistry targets;
  std::string error;
  ASSERT_TRUE(addPluginTargets(registry_, targets, &error)) << error;
  ASSERT_EQ(targets.names(), "null");
  EXPECT_EQ(targets.forBackend("null"), targets.find("null"));
  // A second registry of the same process loads the same plugin: its target is not added
  // twice, and that is not an error.
  tsr_registry_t again = nullptr;
  ASSERT_EQ(consume(tsr_registry_create(&again)), "");
  ASSERT_EQ(consume(tsr_registry_load_plugins(again, TSR_NULL_PLUGIN_PATH)), "");
  EXPECT_TRUE(addPluginTargets(again, targets, &error)) << error;
  EXPECT_EQ(targets.names(), "null");
  tsr_registry_release(again);
}

TEST_F(NullPlugin, ANameClashIsAnErrorNamingThePlugin) {
  TargetRegistry targets;
  ASSERT_TRUE(targets.add(null::makeTarget()));
  std::string error;
  EXPECT_FALSE(addPluginTargets(registry_, targets, &error));
  EXPECT_EQ(error, std::string("plugin 'null' (") + TSR_NULL_PLUGIN_PATH +
                       "): its target 'null' compiles for backend 'null', which target 'null' "
                       "already serves");
}

} // namespace
} // namespace tessera
