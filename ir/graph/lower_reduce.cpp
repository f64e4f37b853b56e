// Placeholder: filled in by the issue #14 work (see ir/graph/CMakeLists.txt).
