fn main() {
    println!("see the other binaries in bench/src/bin");
}
