// libsystemc references sc_main (extern "C"), but trnsim drives the kernel from its
// own main() (runtime/main.cpp, GoogleTest's main): this definition only satisfies
// the link.
extern "C" int sc_main(int, char**) {
  return 1;
}
