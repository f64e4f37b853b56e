// Plugins with the tsr_plugin_entry face (hal_plugin.h): a good one registers its driver (not
// the older tsr_driver_entry it also exports) and is listed by tsr_registry_plugin; a plugin built for another driver ABI major or another
// Target interface version is refused as a whole (no device, not listed) with a reason that
// names both versions and the plugin's path; a layering plugin re-registers a driver found
// through the host's find_driver, and brings none when that driver is absent.
#include "hal/tests/hal_test_util.h"
#include "tessera/hal_plugin.h"

#include <gtest/gtest.h>
#include <string>
#include <vector>

namespace tessera::hal {
namespace {

class PluginVersions : public ::testing::Test {
protected:
  void SetUp() override { TSR_ASSERT_OK(tsr_registry_create(&registry_)); }
  void TearDown() override { tsr_registry_release(registry_); }

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
  uint32_t pluginCount() {
    uint32_t count = 0;
    TSR_EXPECT_OK(tsr_registry_plugin_count(registry_, &count));
    return count;
  }

  tsr_registry_t registry_ = nullptr;
};

TEST_F(PluginVersions, AGoodPluginRegistersItsDriverAndIsListed) {
  TSR_ASSERT_OK(tsr_registry_load_plugins(registry_, TSR_PLUGIN_good));
  EXPECT_EQ(deviceNames(), std::vector<std::string>{"vplug:0"});
  EXPECT_TRUE(unavailable().empty());
  ASSERT_EQ(pluginCount(), 1u);
  tsr_plugin_record_t record = {};
  TSR_ASSERT_OK(tsr_registry_plugin(registry_, 0, &record));
  EXPECT_EQ(std::string(record.path), TSR_PLUGIN_good);
  ASSERT_NE(record.plugin, nullptr);
  EXPECT_EQ(std::string(record.plugin->name), "vplug");
  EXPECT_EQ(record.plugin->target_interface, 0u);
  EXPECT_EQ(record.plugin->create_target, nullptr);
}

TEST_F(PluginVersions, AnotherDriverAbiMajorIsRefusedNamingBothVersions) {
  TSR_ASSERT_OK(tsr_registry_load_plugins(registry_, TSR_PLUGIN_badDriver));
  EXPECT_TRUE(deviceNames().empty());
  EXPECT_EQ(pluginCount(), 0u);
  std::vector<std::string> records = unavailable();
  ASSERT_EQ(records.size(), 1u);
  std::string want =
      "vbaddrv: driver 'vbaddrv' was built for driver ABI 99." +
      std::to_string(TSR_DRIVER_ABI_MINOR) + " but this HAL speaks " +
      std::to_string(TSR_DRIVER_ABI_MAJOR) + "." + std::to_string(TSR_DRIVER_ABI_MINOR) +
      "; major versions must match (rebuild the driver) (plugin " + TSR_PLUGIN_badDriver + ")";
  EXPECT_EQ(records[0], want);
}

TEST_F(PluginVersions, AnotherTargetInterfaceIsRefusedBeforeItsDriverRuns) {
  TSR_ASSERT_OK(tsr_registry_load_plugins(registry_, TSR_PLUGIN_badTarget));
  EXPECT_TRUE(deviceNames().empty()) << "the driver of a refused plugin must not register";
  EXPECT_EQ(pluginCount(), 0u);
  std::vector<std::string> records = unavailable();
  ASSERT_EQ(records.size(), 1u);
  std::string want = "vbadtgt: plugin 'vbadtgt' was built against Target interface version 99 "
                     "but this Tessera implements version " +
                     std::to_string(TSR_TARGET_INTERFACE_VERSION) +
                     "; they must be equal (rebuild the plugin against this installation) "
                     "(plugin " +
                     std::string(TSR_PLUGIN_badTarget) + ")";
  EXPECT_EQ(records[0], want);
}

TEST_F(PluginVersions, ALayeringPluginFindsARegisteredDriver) {
  std::string both = std::string(TSR_PLUGIN_good) + ":" + TSR_PLUGIN_wrap;
  TSR_ASSERT_OK(tsr_registry_load_plugins(registry_, both.c_str()));
  EXPECT_EQ(deviceNames(), (std::vector<std::string>{"vplug:0", "wrapvplug:0"}));
  EXPECT_EQ(pluginCount(), 2u);
  tsr_device_t device = nullptr;
  TSR_ASSERT_OK(tsr_registry_open_device(registry_, "wrapvplug:0", &device));
  tsr_device_info_t info = {};
  info.struct_size = sizeof(info);
  TSR_EXPECT_OK(tsr_device_info(device, &info));
  EXPECT_EQ(std::string(info.vendor), "Old Minor Ltd.") << "the wrapped driver answers";
  EXPECT_EQ(std::string(info.backend), "wrapvplug");
  tsr_device_release(device);
}

TEST_F(PluginVersions, ALayeringPluginWithoutItsDriverBringsNone) {
  TSR_ASSERT_OK(tsr_registry_load_plugins(registry_, TSR_PLUGIN_wrap));
  EXPECT_TRUE(deviceNames().empty());
  EXPECT_EQ(pluginCount(), 0u);
  std::vector<std::string> records = unavailable();
  ASSERT_EQ(records.size(), 1u);
  EXPECT_EQ(records[0], std::string("wrapvplug: plugin 'wrapvplug' brought no driver here (its "
                                    "driver() returned NULL; plugin ") +
                            TSR_PLUGIN_wrap + ")");
}

TEST_F(PluginVersions, PluginQueriesCheckTheirArguments) {
  tsr_plugin_record_t record = {};
  TSR_EXPECT_ERROR(tsr_registry_plugin(registry_, 0, &record), TSR_OUT_OF_RANGE,
                   "tsr_registry_plugin: index 0 is not below the plugin count 0");
  TSR_EXPECT_ERROR(tsr_registry_plugin(registry_, 0, nullptr), TSR_INVALID_ARGUMENT, "out_record");
  TSR_EXPECT_ERROR(tsr_registry_plugin_count(nullptr, nullptr), TSR_INVALID_ARGUMENT, "out_count");
}

} // namespace
} // namespace tessera::hal
