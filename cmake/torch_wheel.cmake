# The LibTorch inside a PyTorch wheel from PyPI, imported without the wheel's own
# TorchConfig.cmake: that file requires a CUDA toolkit (nvcc >= 12.6) on the build machine even
# for a CPU-only program, because the PyPI wheels are CUDA builds. headprune on the CPU needs
# only libtorch_cpu and libc10; libtorch_cpu loads its CUDA runtime (libcudart, libcupti) from the
# NVIDIA wheels installed beside it (its RPATH), so nothing else is asked of the machine.
# HEADPRUNE_TORCH_CUDA=ON also links libtorch_cuda and libc10_cuda (no CUDA toolkit needed: their
# NVIDIA libraries come from the same wheels), so that `--device cuda` runs where a GPU and its
# driver are (scripts/gpu-check); without a GPU the program still starts and refuses cuda.
#
# In:  HEADPRUNE_TORCH_WHEEL, the torch package folder (python -c 'import torch, os;
#      print(os.path.dirname(torch.__file__))').
# Out: the variables find_package(Torch) sets that CMakeLists.txt uses: TORCH_LIBRARIES (an
#      imported target), TORCH_INCLUDE_DIRS, Torch_VERSION.
# Flags as the wheel's TorchConfig.cmake gives them: C++20 (its headers #error below it) and
# the C++11 std::string ABI (_GLIBCXX_USE_CXX11_ABI=1, the wheels' since torch 2.7).
set(_wheel "${HEADPRUNE_TORCH_WHEEL}")
foreach(_file version.py include/torch/csrc/api/include/torch/torch.h lib/libtorch_cpu.so lib/libc10.so)
  if(NOT EXISTS "${_wheel}/${_file}")
    message(FATAL_ERROR "HEADPRUNE_TORCH_WHEEL=${_wheel} is not a PyTorch package folder with LibTorch "
                        "(no ${_file}); give the folder of the installed torch package (scripts/setup --torch=pypi)")
  endif()
endforeach()
file(STRINGS "${_wheel}/version.py" _version REGEX "^__version__ = ")  # e.g. '2.15.0+cu132'
string(REGEX REPLACE "^__version__ = '([0-9.]+).*" "\\1" Torch_VERSION "${_version}")
if(Torch_VERSION VERSION_LESS 2.7)
  message(FATAL_ERROR "the torch ${Torch_VERSION} wheel uses the pre-C++11 string ABI, which cannot link "
                      "Debian's Boost and fmt; use torch 2.7 or later (README, \"Which LibTorch?\")")
endif()
set(TORCH_INCLUDE_DIRS "${_wheel}/include" "${_wheel}/include/torch/csrc/api/include")
add_library(headprune_torch_wheel INTERFACE IMPORTED)
set_target_properties(headprune_torch_wheel PROPERTIES
  INTERFACE_INCLUDE_DIRECTORIES "${TORCH_INCLUDE_DIRS}"
  INTERFACE_SYSTEM_INCLUDE_DIRECTORIES "${TORCH_INCLUDE_DIRS}"
  INTERFACE_COMPILE_DEFINITIONS "_GLIBCXX_USE_CXX11_ABI=1"
  INTERFACE_COMPILE_FEATURES cxx_std_20
  # --no-as-needed: libtorch_cpu registers its operators from static initialisers.
  INTERFACE_LINK_LIBRARIES "-Wl,--no-as-needed;${_wheel}/lib/libtorch_cpu.so;-Wl,--as-needed;${_wheel}/lib/libc10.so")
set(TORCH_LIBRARIES headprune_torch_wheel)
set(_kind CPU)
if(HEADPRUNE_TORCH_CUDA)
  foreach(_file lib/libtorch_cuda.so lib/libc10_cuda.so)
    if(NOT EXISTS "${_wheel}/${_file}")
      message(FATAL_ERROR "HEADPRUNE_TORCH_CUDA=ON but the torch wheel in ${_wheel} has no ${_file} (a CPU-only wheel?)")
    endif()
  endforeach()
  # --no-as-needed: libtorch_cuda registers the CUDA operators and hooks from static initialisers.
  # One item, not "-Wl,--no-as-needed;lib;-Wl,--as-needed": CMake drops repeated flags from a link
  # line, so a second "-Wl,--no-as-needed" vanished, the linker dropped libtorch_cuda as unused
  # and the program had no CUDA (seen on an H200: "this LibTorch build has no usable CUDA").
  set_property(TARGET headprune_torch_wheel APPEND PROPERTY INTERFACE_LINK_LIBRARIES
    "-Wl,--no-as-needed,${_wheel}/lib/libtorch_cuda.so,${_wheel}/lib/libc10_cuda.so,--as-needed")
  set(_kind "CPU and CUDA")
endif()
message(STATUS "LibTorch ${Torch_VERSION} (${_kind}) from the PyTorch wheel in ${_wheel}")
