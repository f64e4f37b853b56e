// placeholder: tests in progress
#include <gtest/gtest.h>
